"""The switch transaction against the real simulator process: every failure ends with the
previous profile serving, the right cause and exit code."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from rigctl.errors import ExitCode
from rigctl.profiles.schema import ProfileError
from rigctl.serve import switch as transaction
from rigctl.serve.context import Event, ServeContext
from rigctl.serve.lock import RigBusyError
from rigctl.sim.claims import default_claims_dir, write_claim
from rigctl.state import boots
from rigctl.state.statefiles import read_record, read_state
from rigctl.units import MIB
from tests.support import present
from tests.support.serving import UNPREDICTED_MODEL, add_profile


def serves(port: int) -> tuple[str, int]:
    cards = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=10).json()["data"]
    return cards[0]["id"], cards[0]["max_model_len"]


def test_good_switch_records_state_history_and_serves(ctx: ServeContext, events: list[Event], port: int) -> None:
    outcome = transaction.switch(ctx, "good")
    assert outcome.status == "switched" and outcome.exit_code is ExitCode.OK
    assert serves(port) == ("qwen3.6-27b", 131072)
    state = present(read_state())
    assert state.status == "serving" and state.profile == "good" and state.last_good == "good"
    (record,) = boots.read_all()
    assert record.profile == "good" and record.vllm_version == "0.33.0" and record.max_model_len == 131072
    assert 500_000 < present(record.kv_tokens) < 800_000 and present(record.boot_seconds) < 10
    phases = [e.text for e in events if e.kind == "phase"]
    assert phases[0] == "vLLM started" and phases[-3] == "application startup complete"
    assert phases[-2:] == ["verifying: a chat completion (1 token), when the model has a chat template", "verified: chat"]
    verification = present(record.verification)
    assert verification["ok"] and verification["checks"][0]["name"] == "chat"
    assert "KV cache allocated" in phases


FAILURES = [
    ("oom_load", 'quantization = "fp8"\ntensor_parallel_size = 1\n', "CUDA out of memory while loading the weights"),
    # a 24 GB replica with MTP: the draft's own embedding and LM head at load (the 4090 owner's)
    (
        "oom_load",
        'tensor_parallel_size = 1\ndata_parallel_size = 2\nspeculative_config = { method = "mtp", num_speculative_tokens = 1 }\n',
        "CUDA out of memory while loading the weights",
    ),
    ("max_model_len", "", "vLLM estimates"),  # UNPREDICTED_MODEL below: it fails at the boot
    ("crash", '[env]\nRIGCTL_SIM_CRASH_AT = "profile"\n', "crashed"),
    (
        "unknown_flag",
        'async_scheduling = true\n[env]\nRIGCTL_SIM_REJECT_FLAGS = "--async-scheduling"\n',
        "vLLM does not accept --async-scheduling",
    ),
]


@pytest.mark.parametrize("cause,body,summary", FAILURES, ids=["oom_load", "oom_load-mtp-draft", *[f[0] for f in FAILURES[2:]]])
def test_failed_switch_rolls_back(ctx: ServeContext, profiles: Path, port: int, cause: str, body: str, summary: str) -> None:
    add_profile(profiles, "bad", body, port, top=UNPREDICTED_MODEL if cause == "max_model_len" else "")
    assert transaction.switch(ctx, "good").status == "switched"
    outcome = transaction.switch(ctx, "bad")
    assert outcome.status == "rolled_back" and outcome.exit_code is ExitCode.ROLLED_BACK
    assert present(present(outcome.attempt).failure).cause == cause, present(outcome.attempt).failure
    assert summary in outcome.message
    assert present(outcome.rollback).ok and outcome.rollback_profile == "good"
    assert serves(port)[0] == "qwen3.6-27b"
    state = present(read_state())
    assert state.profile == "good" and state.status == "serving" and "rolled back" in state.detail


def test_max_model_len_failure_names_the_suggested_length(ctx: ServeContext, profiles: Path, port: int) -> None:
    add_profile(profiles, "long", "", port, top=UNPREDICTED_MODEL)
    transaction.switch(ctx, "good")
    failure = present(present(transaction.switch(ctx, "long").attempt).failure)
    assert failure.max_model_len == 131_072 and 50_000 < present(failure.estimated_max_len) < 131_072
    assert f"set max_model_len to {failure.estimated_max_len:,} or less" in present(failure.suggestion)


def test_a_context_past_the_models_maximum_is_refused_before_the_stop(ctx: ServeContext, profiles: Path, port: int) -> None:
    """Exact, from the model's config (rigctl's copy when it is not downloaded), as vLLM refuses it."""
    add_profile(profiles, "long", "max_model_len = 1048576\n", port)
    assert transaction.switch(ctx, "good").status == "switched"
    pid = present(read_record()).pid
    with pytest.raises(
        ProfileError,
        match=r"1,048,576 is more than the model allows \(max_position_embeddings "
        r"262,144 in rigctl's copy of its config.json",
    ):
        transaction.switch(ctx, "long")
    assert present(read_record()).pid == pid


def test_foreign_vram_refuses_the_greedy_profile_before_stopping_and_force_rolls_back(
    ctx: ServeContext, profiles: Path, port: int
) -> None:
    add_profile(profiles, "modest", "gpu_memory_utilization = 0.80\n", port)
    add_profile(profiles, "greedy", "gpu_memory_utilization = 0.95\n", port)
    assert transaction.switch(ctx, "modest").status == "switched"
    pid_before = present(read_record()).pid
    squatter = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        write_claim(default_claims_dir(), squatter.pid, [{"gpu": 0, "memory_bytes": 3000 * MIB, "title": None, "load": 0.0}])
        outcome = transaction.switch(ctx, "greedy")
        assert outcome.status == "refused" and outcome.exit_code is ExitCode.ROLLED_BACK
        assert "modest keeps serving" in outcome.message and f"pid {squatter.pid}, 2.9 GiB" in outcome.message
        assert "gpu_memory_utilization 0.95 asks for 22.8 of its 24.0 GiB" in outcome.message
        assert present(read_record()).pid == pid_before  # never stopped
        forced = transaction.switch(ctx, "greedy", force=True)
        assert present(present(forced.attempt).failure).cause == "foreign_vram"
        assert forced.status == "rolled_back" and serves(port)[0] == "qwen3.6-27b"
    finally:
        squatter.kill()
        squatter.wait()


def test_boot_timeout_rolls_back(ctx: ServeContext, profiles: Path, port: int) -> None:
    add_profile(profiles, "stuck", '[env]\nRIGCTL_SIM_HANG_AT = "graphs"\n', port)
    transaction.switch(ctx, "good")
    outcome = transaction.switch(ctx, "stuck", timeout=1.5)
    assert present(present(outcome.attempt).failure).cause == "timeout"
    assert "last phase: KV cache allocated" in present(present(outcome.attempt).failure).summary
    assert outcome.status == "rolled_back" and serves(port)[0] == "qwen3.6-27b"


def test_port_held_by_another_process_refuses_before_touching_anything(ctx: ServeContext, profiles: Path, port: int) -> None:
    transaction.switch(ctx, "good")
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        busy = other.getsockname()[1]
        add_profile(profiles, "elsewhere", "", busy)
        outcome = transaction.switch(ctx, "elsewhere")
        assert outcome.status == "refused" and f"port {busy} is held by pid {os.getpid()}" in outcome.message
        assert outcome.exit_code is ExitCode.ROLLED_BACK and "good keeps serving" in outcome.message
    assert serves(port)[0] == "qwen3.6-27b" and present(read_state()).profile == "good"


def test_port_in_use_at_boot_is_classified(ctx: ServeContext, profiles: Path, port: int) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", port))  # bound, not listening: preflight cannot see it, vLLM's bind can
        outcome = transaction.start(ctx, "good")
    assert outcome.status == "failed" and present(present(outcome.attempt).failure).cause == "port_in_use"
    assert outcome.exit_code is ExitCode.ROLLBACK_FAILED


def test_invalid_profile_touches_nothing(ctx: ServeContext, profiles: Path, port: int) -> None:
    transaction.switch(ctx, "good")
    add_profile(profiles, "typo", "max_num_seq = 8\n", port)
    before = read_state()
    with pytest.raises(ProfileError, match="did you mean max_num_seqs"):
        transaction.switch(ctx, "typo")
    assert read_state() == before and serves(port)[0] == "qwen3.6-27b"


def test_no_rollback_leaves_nothing_serving(ctx: ServeContext, profiles: Path, port: int) -> None:
    add_profile(profiles, "bad", '[env]\nRIGCTL_SIM_CRASH_AT = "load"\n', port)
    transaction.switch(ctx, "good")
    outcome = transaction.switch(ctx, "bad", rollback=False)
    assert outcome.status == "failed" and outcome.exit_code is ExitCode.ROLLBACK_FAILED
    assert present(read_state()).status == "failed" and present(read_state()).profile is None


def test_second_switch_is_refused_while_one_runs_then_may_wait(ctx: ServeContext, profiles: Path, port: int) -> None:
    add_profile(profiles, "slow", '[env]\nRIGCTL_SIM_TIME_SCALE = "0.04"\n', port)
    results: dict[str, transaction.SwitchOutcome] = {}
    first = threading.Thread(target=lambda: results.setdefault("a", transaction.switch(ctx, "slow")))
    first.start()
    # the first switch holds the lock once it says it is switching (active.json, written under the lock)
    deadline = time.monotonic() + 60
    while not ((state := read_state()) and state.status == "switching" and state.target == "slow"):
        assert time.monotonic() < deadline and first.is_alive(), "the first switch never took the lock"
        time.sleep(0.02)
    with pytest.raises(RigBusyError, match=r"the rig is busy: pid \d+ \(switch to slow"):
        transaction.switch(ctx, "alt", lock_wait=0)
    waited = transaction.switch(ctx, "alt", lock_wait=30)
    first.join()
    assert results["a"].status == "switched" and waited.status == "switched"
    assert present(read_state()).profile == "alt"


def test_history_compares_pools(ctx: ServeContext) -> None:
    transaction.switch(ctx, "good")
    transaction.switch(ctx, "alt")
    pools = {r.profile: present(r.kv_tokens) for r in boots.read_all()}
    assert pools["good"] > 2 * pools["alt"]  # int4 weights leave more than twice the KV of FP8
