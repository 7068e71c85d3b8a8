"""Fault 2: a launcher that cannot start vLLM. Refused before the stop where it can be known;
rolled back (never a traceback, never exit 1) where it fails only after the stop."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from tests.faults.rig import SERVED, Rig


def _script(path: Path, body: str) -> Path:
    path.write_text(body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_missing_vllm_executable_is_refused_before_the_stop(rig: Rig, tmp_path: Path) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    pid = rig.record()["pid"]
    rig.add_profile("gone", f'[rigctl]\nvllm_command = ["{tmp_path}/deleted-venv/bin/vllm"]\n')
    refused = rig.rigctl("switch", "gone")
    assert refused.returncode == 3, refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert "deleted-venv/bin/vllm: no such file" in last and "good keeps serving" in last
    assert rig.record()["pid"] == pid and rig.serves()[0] == SERVED
    rig.check_invariants()


def test_a_venv_whose_interpreter_was_deleted_is_refused_before_the_stop(rig: Rig, tmp_path: Path) -> None:
    """pip's `vllm` script is executable, but its #! points into the venv that is gone."""
    assert rig.rigctl("switch", "good").returncode == 0
    vllm = _script(tmp_path / "vllm", f"#!{tmp_path}/old-venv/bin/python3\nimport vllm\n")
    rig.add_profile("stale", f'[rigctl]\nvllm_command = ["{vllm}"]\n')
    refused = rig.rigctl("switch", "stale")
    assert refused.returncode == 3
    assert "its interpreter" in refused.stderr and "is gone" in refused.stderr
    assert "good keeps serving" in refused.stderr and rig.serves()[0] == SERVED
    rig.check_invariants()


def test_a_launch_that_fails_after_the_stop_rolls_back(rig: Rig, tmp_path: Path) -> None:
    """The command exists at the check and is gone when vLLM is started (the venv deleted while
    the old server shut down): the failure is a failed attempt, and the last good one returns."""
    rig.add_profile("good", '[env]\nRIGCTL_SIM_STOP_DELAY = "1.5"\n')
    assert rig.rigctl("switch", "good").returncode == 0
    vllm = _script(
        tmp_path / "venv-vllm",
        f"#!{sys.executable}\nimport runpy, sys\n"
        "sys.argv[0] = 'vllm'\nrunpy.run_module('rigctl.sim.vllm_server', run_name='__main__')\n",
    )
    rig.add_profile("doomed", f'[rigctl]\nvllm_command = ["{vllm}"]\n')
    switch = rig.popen("switch", "doomed")
    rig.wait_for(switch, "stopping good")
    vllm.unlink()
    code, out = rig.finish(switch)
    assert code == 3, out
    assert "doomed failed: vLLM could not be started" in out and "No such file or directory" in out
    assert "rolled back: good serves again" in out
    assert rig.status()["active_profile"] == "good" and rig.serves()[0] == SERVED
    assert rig.state()["status"] == "serving"
    rig.check_invariants()


@pytest.mark.parametrize("launcher", ["docker", "systemd"])
def test_a_launcher_that_cannot_reach_its_manager_is_refused_before_the_stop(rig: Rig, launcher: str) -> None:
    """On this machine the docker client has no daemon and systemctl no systemd: both real faults."""
    assert rig.rigctl("switch", "good").returncode == 0
    pid = rig.record()["pid"]
    env = {"RIGCTL_LAUNCHER": launcher, "RIGCTL_SIM": ""}
    rig.write_config(
        f'[server]\nstop_grace = 3\nvllm_command = ["{sys.executable}", "-m", '
        f'"rigctl.sim.vllm_server"]\n[systemd]\nuser = true\ndropin_dir = "{rig.home}/dropin"\n'
    )
    refused = rig.rigctl("switch", "alt", env=env)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.startswith("not switched: ") and "good keeps serving" in last
    assert ("docker" in last) if launcher == "docker" else ("systemd" in last or "systemctl" in last)
    assert rig.record()["pid"] == pid and rig.serves()[0] == SERVED
    rig.check_invariants()
