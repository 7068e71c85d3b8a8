"""`rigctl adopt`: a vLLM server the owner started by hand (here the simulator behind a `vllm`
script, a real process on 127.0.0.1, its own process group as `setsid` or a job-control shell
gives it) is taken over: recorded as serving, imported as a profile, and the next switch drains
it and stops it as if rigctl had started it. One it could not stop properly is refused, and
nothing is written."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.faults.rig import Rig

MODEL = "Qwen/Qwen3.6-27B-AWQ"


def vllm_script(directory: Path) -> Path:
    """A `vllm` whose `serve` is the simulator, run in this process so /proc shows `vllm serve`."""
    path = directory / "bin" / "vllm"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"#!{sys.executable}\n"
        "import runpy, sys\n"
        "if '--version' in sys.argv:\n"
        "    print('0.33.0'); sys.exit(0)\n"
        "runpy.run_module('rigctl.sim.vllm_server', run_name='__main__')\n"
    )
    path.chmod(0o755)
    return path


@pytest.fixture
def by_hand(rig: Rig, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """`setsid vllm serve ...` started by the owner, outside rigctl, its output in a file."""
    log = (tmp_path / "vllm.log").open("w")
    argv = [str(vllm_script(tmp_path)), "serve", MODEL, "-tp", "2", "--max-model-len", "32768"]
    argv += ["--served-model-name", "qwen", "--port", str(rig.port), "--host", "127.0.0.1"]
    proc = subprocess.Popen(argv, env=rig.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{rig.port}/v1/models", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, (tmp_path / "vllm.log").read_text()
        time.sleep(0.2)
    yield proc
    proc.kill()
    proc.wait()
    log.close()


def test_a_server_started_by_hand_is_taken_over_and_the_next_switch_stops_it(rig: Rig, by_hand: subprocess.Popen[str]) -> None:
    done = rig.rigctl("adopt", "mine", "--pid", str(by_hand.pid))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"imported process {by_hand.pid} as mine" in done.stdout
    assert f"adopted pid {by_hand.pid} as mine, serving on 127.0.0.1:{rig.port}; its log: " in done.stdout
    status = rig.status()
    assert status["active_profile"] == "mine"
    assert "tensor_parallel_size = 2" in (rig.profiles / "mine.toml").read_text()
    # the next switch drains it, stops it (its process group), and serves the new profile
    switched = rig.rigctl("switch", "good")
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert by_hand.wait(30) is not None
    assert rig.status()["active_profile"] == "good"
    rig.check_invariants()


def test_a_second_adopt_while_rigctl_serves_is_refused_and_writes_nothing(rig: Rig, by_hand: subprocess.Popen[str]) -> None:
    assert rig.rigctl("adopt", "mine", "--pid", str(by_hand.pid)).returncode == 0
    endings = json.loads(rig.rigctl("history", "--switches", "--json").stdout)
    assert [(e["action"], e["status"], e["target"]) for e in endings] == [("adopt", "switched", "mine")]  # an adoption is a line
    again = rig.rigctl("adopt", "other", "--pid", str(by_hand.pid))
    assert again.returncode != 0 and "rigctl already serves mine" in again.stderr, again.stderr
    assert not (rig.profiles / "other.toml").exists()  # refused: no profile imported for it


def test_a_server_that_does_not_answer_is_refused_and_nothing_is_written(rig: Rig, by_hand: subprocess.Popen[str]) -> None:
    by_hand.send_signal(signal.SIGSTOP)  # alive, its port taken, never answering
    try:
        refused = rig.rigctl("adopt", "mine", "--pid", str(by_hand.pid))
    finally:
        by_hand.send_signal(signal.SIGCONT)
    assert refused.returncode != 0 and f"process {by_hand.pid} does not answer" in refused.stderr, refused.stderr
    assert not (rig.profiles / "mine.toml").exists() and not (rig.state_dir / "server.json").exists()
    assert not (rig.config_dir / "secrets").exists()


def test_a_server_in_another_programs_process_group_is_refused_and_nothing_is_written(rig: Rig, tmp_path: Path) -> None:
    """Started by a script without job control, the server shares the script's process group:
    stopping that group would take the script (or a login shell) with it."""
    argv = [str(vllm_script(tmp_path)), "serve", MODEL, "-tp", "2", "--max-model-len", "32768", "--port", str(rig.port)]
    script = subprocess.Popen(["bash", "-c", '"$@" & wait', "bash", *argv], env=rig.env, start_new_session=True)
    try:
        server = None
        deadline = time.monotonic() + 60
        while server is None and time.monotonic() < deadline:
            children = subprocess.run(["pgrep", "-P", str(script.pid)], capture_output=True, text=True).stdout.split()
            server = int(children[0]) if children else None
            time.sleep(0.1)
        assert server is not None
        refused = rig.rigctl("adopt", "mine", "--pid", str(server))
        assert refused.returncode != 0
        assert f"process {server} is not its process group's leader (group {script.pid}: bash" in refused.stderr, refused.stderr
        assert not (rig.profiles / "mine.toml").exists() and not (rig.state_dir / "server.json").exists()
    finally:
        subprocess.run(["pkill", "-KILL", "-g", str(script.pid)], check=False)
        script.wait()


def test_no_server_is_one_line(rig: Rig) -> None:
    done = rig.rigctl("adopt", "mine", "--pid", "999999999")
    assert done.returncode == 2 and done.stderr.strip() == "rigctl: no process 999999999"
