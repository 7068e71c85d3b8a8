"""A switch is done when the owner's apps work, through the real CLI on the simulated rig: running
requests drain before the stop, [verify] holds the boot to what the apps need (tool calls, a
context, the owner's own requests) and rolls back when it fails, a target that cannot give it is
refused before the stop, and --dry-run shows the cost touching nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.faults.rig import SERVED, Rig
from tests.support.serving import LongRequest, ShortRequests

CONFIG = "[server]\nstop_grace = 3\nkill_wait = 2\n"


def slow_rig(rig: Rig) -> Rig:
    rig.env["RIGCTL_SIM_SPEED"] = "0.05"  # a generation of 200 tokens takes seconds
    return rig


def test_a_running_request_survives_a_switch_by_default(rig: Rig) -> None:
    slow_rig(rig)
    assert rig.rigctl("switch", "good").returncode == 0
    request = LongRequest(rig.port, 120)
    request.start()
    assert request.started.wait(60)
    switched = rig.rigctl("switch", "alt")
    request.join(60)
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert "draining: 1 request(s) running or waiting" in switched.stdout, switched.stdout
    assert "nothing running or waiting after" in switched.stdout and "(1 request(s) were at the start)" in switched.stdout
    assert request.finish_reason == "length" and not request.error, (request.finish_reason, request.error)
    assert rig.status()["active_profile"] == "alt"
    rig.check_invariants()


def test_no_drain_cuts_it_and_says_so(rig: Rig) -> None:
    slow_rig(rig)
    assert rig.rigctl("switch", "good").returncode == 0
    request = LongRequest(rig.port, 400)
    request.start()
    assert request.started.wait(60)
    switched = rig.rigctl("switch", "alt", "--no-drain")
    request.join(60)
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert "--no-drain: 1 request(s) running or waiting on good are cut" in switched.stdout, switched.stdout
    assert request.finish_reason != "length"


def test_the_drain_deadline_cuts_what_still_runs_and_says_how_many(rig: Rig) -> None:
    slow_rig(rig)
    assert rig.rigctl("switch", "good").returncode == 0
    request = LongRequest(rig.port, 2000)
    request.start()
    assert request.started.wait(60)
    switched = rig.rigctl("switch", "alt", "--drain", "1")
    request.join(60)
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert "1 request(s) still running after 1 s: cut" in switched.stdout, switched.stdout
    assert "finished" not in switched.stdout, switched.stdout


def test_short_requests_that_finish_are_never_counted_as_the_long_one_finished(rig: Rig) -> None:
    """The issue's case: a long stream and an app's short requests straight to vLLM. vLLM's success
    counter grows with the short ones, yet the long one still runs: the switch waits for the gauges
    and, at its deadline, says the long one was cut, never that anything finished."""
    slow_rig(rig)
    assert rig.rigctl("switch", "good").returncode == 0
    long = LongRequest(rig.port, 2000)
    long.start()
    assert long.started.wait(60)
    shorts = ShortRequests(rig.port)
    shorts.start()
    try:
        assert shorts.answered.wait(60)
        switched = rig.rigctl("switch", "alt", "--drain", "3")
    finally:
        shorts.stop.set()
        shorts.join(60)
    long.join(60)
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert shorts.count >= 1  # the engine's success counter grew while the long one ran
    assert "still running after 3 s: cut" in switched.stdout, switched.stdout
    assert "finished" not in switched.stdout, switched.stdout
    assert long.finish_reason != "length"  # cut, as said
    ending = json.loads(rig.rigctl("history", "--switches", "--json").stdout)[-1]
    assert ending["finished"] is None and ending["cut"] >= 1 and ending["running"] >= 1, ending


def no_tools(rig: Rig) -> None:
    rig.add_profile("notools", "enable_auto_tool_choice = false\n")


def test_tools_the_apps_need_refuse_a_profile_without_them_before_the_stop(rig: Rig) -> None:
    rig.write_config(CONFIG + "[verify]\ntools = true\n")
    no_tools(rig)
    assert rig.rigctl("switch", "good").returncode == 0
    pid = rig.record()["pid"]
    refused = rig.rigctl("switch", "notools")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert refused.stderr.strip() == (
        "not switched: notools has no tool calling (--enable-auto-tool-choice missing), and [verify] tools = true "
        "says the apps need it (--force tries it; the verification then decides); good keeps serving"
    )
    assert rig.record()["pid"] == pid

    forced = rig.rigctl("switch", "notools", "--force")
    assert forced.returncode == 3, forced.stdout + forced.stderr
    last = forced.stderr.strip().splitlines()[-1]
    assert last.startswith(
        'notools failed: the new profile refuses tool calls: vLLM said: "auto" tool choice '
        "requires --enable-auto-tool-choice and --tool-call-parser to be set"
    ), last
    assert last.endswith("rolled back: good serves again")
    assert rig.status()["active_profile"] == "good"
    history = json.loads(rig.rigctl("history", "--json").stdout)
    assert history[-1]["profile"] == "good" and history[-1]["verification"]["ok"] is True
    assert [c["name"] for c in history[-1]["verification"]["checks"]] == ["chat", "tools"]
    rig.check_invariants()


def test_without_verify_dropping_tool_calling_is_a_warning(rig: Rig) -> None:
    no_tools(rig)
    assert rig.rigctl("switch", "good").returncode == 0
    switched = rig.rigctl("switch", "notools")
    assert switched.returncode == 0
    assert (
        "warning: the apps in front of this rig lose tool calling (--enable-auto-tool-choice --tool-call-parser "
        'qwen3_coder): apps that send tool_choice "auto" get HTTP 400'
    ) in switched.stdout, switched.stdout


def test_no_verify_is_kept_in_the_boot_record(rig: Rig) -> None:
    assert rig.rigctl("switch", "good", "--no-verify").returncode == 0
    record = json.loads(rig.rigctl("history", "--json").stdout)[-1]
    assert record["verification"]["skipped"] == "--no-verify"


def test_a_context_shorter_than_the_apps_need_is_a_failed_boot(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    rig.add_profile("short", "max_model_len = 32768\n").write_text(
        'extends = "good"\n[vllm]\nmax_model_len = 32768\n[verify]\nmin_context = 65536\n'
    )
    failed = rig.rigctl("switch", "short")
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert "short failed: serves a context of 32,768 tokens, and the apps need 65,536 ([verify] min_context)" in failed.stderr, (
        failed.stderr
    )
    assert rig.serves() == (SERVED, 131072)


def test_the_owners_own_requests_are_sent_and_a_refused_one_fails_the_boot(rig: Rig) -> None:
    requests = rig.config_dir / "verify.jsonl"
    requests.write_text(
        '{"endpoint": "/v1/chat/completions", "body": {"messages": [{"role": "user", "content": "hi"}], '
        '"max_tokens": 2}, "status": 200}\n'
        '{"endpoint": "/v1/completions", "body": {"model": "gpt-4o", "prompt": "hi", "max_tokens": 1}}\n'
    )
    rig.write_config(CONFIG + '[verify]\nrequests = "verify.jsonl"\n')
    assert rig.rigctl("switch", "good", "--no-verify").returncode == 0
    failed = rig.rigctl("switch", "alt")
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert (
        f"alt failed: {requests}:2: POST /v1/completions answered 404, expected 200: vLLM said: The model `gpt-4o` does not exist."
    ) in failed.stderr, failed.stderr
    assert "a chat completion answered" not in failed.stderr
    requests.write_text(requests.read_text().splitlines()[0] + "\n")
    switched = rig.rigctl("switch", "alt")
    assert switched.returncode == 0 and "verified: chat, request" in switched.stdout, switched.stdout
    requests.write_text("not json\n")
    refused = rig.rigctl("switch", "good")
    assert refused.returncode == 2 and f"{requests}:1: not a JSON object" in refused.stderr
    assert rig.status()["active_profile"] == "alt"  # a bad requests file touches nothing


def test_a_dry_run_shows_the_cost_and_touches_nothing(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "home")
    rig.env["RIGCTL_SIM"] = "2x4090-pcie"
    rig.add_profile("tp2", "", parent="qwen36-27b-4090-tp2-mtp")
    rig.add_profile("dp2", "", parent="qwen36-27b-4090-dp2")
    try:
        assert rig.rigctl("switch", "tp2").returncode == 0
        pid = rig.record()["pid"]
        done = rig.rigctl("switch", "dp2", "--dry-run", "--json")
        assert done.returncode == 0, done.stderr
        cost: dict[str, Any] = json.loads(done.stdout)
        assert cost["target"] == "dp2" and cost["active"]["profile"] == "tp2" and cost["running_requests"] == 0
        assert cost["active"]["pool_tokens"] > 300_000 and 20_000 < cost["predicted_pool_tokens"] < 60_000
        assert "rigctl's copy of its config.json" in cost["predicted_from"]
        assert any("the fit rule would split this model" in w for w in cost["warnings"]), cost["warnings"]
        assert {c["what"] for c in cost["argv_diff"]} >= {"--data-parallel-size", "--tensor-parallel-size"}
        assert cost["verification"] and cost["refused"] is None and cost["pool_change"].startswith("KV pool ")
        text = rig.rigctl("switch", "dp2", "--dry-run")
        assert text.returncode == 0 and "KV pool " in text.stdout and "tokens (-" in text.stdout, text.stdout
        assert rig.record()["pid"] == pid and rig.status()["active_profile"] == "tp2"
        assert len(json.loads(rig.rigctl("history", "--json").stdout)) == 1
    finally:
        rig.cleanup()


@pytest.mark.parametrize(
    "shipped",
    [
        "qwen36-27b-awq-tp2",
        "qwen36-27b-fp8-tp2",
        "qwen36-27b-awq-tp2-async",
        "qwen36-27b-autoround-tp2",
        "qwen36-27b-1x3090",
        "qwen25-3b-dp2",
    ],
)
def test_every_shipped_profile_has_a_dry_run_cost(rig: Rig, shipped: str) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    done = rig.rigctl("switch", shipped, "--dry-run", "--json")
    assert done.returncode in (0, 3), done.stderr
    cost = json.loads(done.stdout)
    assert cost["target"] == shipped and cost["active"]["profile"] == "good"
    assert done.returncode == 0 or cost["refused"]


def test_the_lints_the_owners_learnt(rig: Rig) -> None:
    rig.add_profile("both", '[env]\nPYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True,max_split_size_mb:512"\n')
    done = rig.rigctl("profile", "validate", "both")
    assert "max_split_size_mb works against expandable_segments:True" in done.stdout + done.stderr


def test_a_kv_too_small_fix_is_capped_at_the_models_maximum(rig: Rig, tmp_path: Path) -> None:
    """vLLM's estimate of what the pool holds (past 262,144 for a 1M context asked with the override)
    is not what the model takes: the fix says the model's maximum."""
    log = tmp_path / "boot.log"
    with log.open("w") as handle:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "rigctl.sim.vllm_server",
                "serve",
                "Qwen/Qwen3.6-27B-AWQ",
                "--tensor-parallel-size",
                "2",
                "--quantization",
                "awq_marlin",
                "--max-model-len",
                "1048576",
                "--port",
                str(rig.port),
            ],
            stdout=handle,
            stderr=subprocess.STDOUT,
            timeout=120,
            env={**rig.env, "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"},
        )
    assert "estimated maximum model length is" in log.read_text()
    read = rig.rigctl("bootlog", str(log))
    assert read.returncode == 1
    assert "fix: set max_model_len to 262,144 or less (the model's maximum, max_position_embeddings" in read.stdout


def test_past_the_models_maximum_the_simulator_refuses_as_vllm_does(rig: Rig) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rigctl.sim.vllm_server",
            "serve",
            "Qwen/Qwen3.6-27B-AWQ",
            "--max-model-len",
            "300000",
            "--port",
            str(rig.port),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=rig.env,
    )
    assert done.returncode == 1
    assert "User-specified max_model_len (300000) is greater than the derived max_model_len" in done.stdout
