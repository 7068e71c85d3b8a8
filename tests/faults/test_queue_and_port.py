"""Faults 1 (a queued switch trusted a record read before it waited) and the port checks."""

from __future__ import annotations

import socket
import subprocess
import sys

from tests.faults.rig import SERVED, Rig


def test_queued_switch_reads_what_runs_after_the_wait(rig: Rig) -> None:
    digest = rig.profiles_digest()
    assert rig.rigctl("switch", "good").returncode == 0
    rig.add_profile("slow", '[env]\nRIGCTL_SIM_TIME_SCALE = "0.05"\n')
    digest = rig.profiles_digest()
    first = rig.popen("switch", "slow")
    rig.wait_for(first, "starting slow")  # it holds the lock and has stopped good
    queued = rig.rigctl("switch", "alt", "--wait", "60")
    code, _ = rig.finish(first)
    assert code == 0
    assert queued.returncode == 0, queued.stdout + queued.stderr
    assert "stopping slow" in queued.stdout  # it saw what ran once it had the lock
    status = rig.status()
    assert status["active_profile"] == "alt"
    assert rig.listener_pid() == rig.record()["pid"]  # the one answering is the one recorded
    assert rig.serves()[0] == SERVED
    rig.check_invariants(digest)
    assert rig.rigctl("stop").returncode == 0
    assert rig.answering() is None and rig.listener_pid() is None


def test_a_foreign_server_answering_during_the_boot_is_not_taken_for_ours(rig: Rig) -> None:
    """Preflight finds the port free; while our vLLM imports, another server takes the port and
    answers with the served name. The boot must not be reported as ready."""
    rig.add_profile("slowbind", '[env]\nRIGCTL_SIM_TIME_SCALE = "0.4"\n')  # ~3 s of "imports" before it binds
    switch = rig.popen("switch", "slowbind")
    rig.wait_for(switch, "starting slowbind")
    foreign = subprocess.Popen(
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
            "32768",
            "--served-model-name",
            SERVED,
            "--host",
            "127.0.0.1",
            "--port",
            str(rig.port),
        ],
        env={**rig.env, "RIGCTL_SIM_TIME_SCALE": "0.0", "XDG_STATE_HOME": str(rig.home / "foreign")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        code, out = rig.finish(switch)
        assert code == 4, out  # nothing of rigctl's serves; nothing served before
        assert "answered by another server" in out or "port is already in use" in out, out
        assert f"pid {foreign.pid}" in out or "already in use" in out
        status = rig.status()
        assert status["active_profile"] is None
        rig.check_invariants()
    finally:
        foreign.kill()
        foreign.wait()


def test_a_port_held_by_another_program_refuses_before_the_stop(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    pid = rig.record()["pid"]
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        busy = other.getsockname()[1]
        rig.add_profile("elsewhere", "", port=busy)
        refused = rig.rigctl("switch", "elsewhere")
    assert refused.returncode == 3
    assert refused.stderr.strip().splitlines()[-1].startswith(f"not switched: port {busy} is held by pid")
    assert "good keeps serving" in refused.stderr
    assert rig.record()["pid"] == pid and rig.serves()[0] == SERVED
    rig.check_invariants()
