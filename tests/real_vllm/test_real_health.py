"""`rigctl status --check` and `rigctl watch` against the real vLLM CPU build: healthy while it
serves, down (the process gone) once something other than rigctl killed it, and the death alerted."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.real_vllm.conftest import RealRig


def check(real: RealRig) -> tuple[int, dict[str, object]]:
    done = real.rigctl("status", "--check", "--window", "2", "--json", timeout=120)
    answer = json.loads(done.stdout)
    assert answer["exit_code"] == done.returncode, answer
    return done.returncode, answer


def test_healthy_while_it_serves_then_down_once_killed(real: RealRig) -> None:
    started = real.rigctl("switch", "tiny", timeout=400)
    assert started.returncode == 0, started.stdout + started.stderr
    code, answer = check(real)
    assert code == 0 and answer["check"] == "healthy" and str(answer["cause"]).startswith("tiny serves (pid ")
    pid = real.record()["pid"]
    os.killpg(pid, signal.SIGKILL)  # the engine dies; rigctl did not stop it
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        code, answer = check(real)
        if code == 7:
            break
        time.sleep(0.5)
    assert code == 7 and answer["check"] == "down", answer
    assert answer["cause"] == f"the server of tiny (pid {pid}) is gone"


HOOK = "import sys\nwith open(sys.argv[1], 'a') as out:\n    out.write(sys.stdin.read())\n"


def test_the_watch_service_is_quiet_while_it_serves_and_says_the_death_once_killed(real: RealRig, tmp_path: Path) -> None:
    """The alerts judged from the real engine's metrics: no false alarm from a healthy engine under
    traffic (low limits, so a misread figure would fire), the death said on the hook's stdin."""
    hook, said = tmp_path / "hook.py", tmp_path / "said.jsonl"
    hook.write_text(HOOK)
    config = real.config_dir / "config.toml"
    kept = config.read_text()
    command = json.dumps([sys.executable, str(hook), str(said)])
    config.write_text(f"{kept}[alerts]\nstall_s = 5\nqueue_s = 2\nkv_full_s = 5\ncommand = {command}\n")
    watch: subprocess.Popen[str] | None = None
    try:
        started = real.rigctl("switch", "tiny", timeout=400)
        assert started.returncode == 0, started.stdout + started.stderr
        watch = real.popen("watch", "--interval", "1")
        # The traffic goes in only once the watch has its first sample: a row is the change between
        # two samples, so traffic that ended before the first one is in no row.
        wait_for(lambda: len(rows(real)) >= 1, watch)
        url = f"http://127.0.0.1:{real.port}/v1/completions"
        for i in range(12):
            done = httpx.post(url, json={"model": "tiny", "prompt": f"{i} hello", "max_tokens": 16}, timeout=120)
            assert done.status_code == 200, done.text
        wait_for(lambda: sum(r[1] for r in rows(real)) > 0 and len(rows(real)) >= 5, watch)
        assert sum(r[1] for r in rows(real)) >= 12  # recorded, with its traffic
        assert not said.exists() or not said.read_text().strip(), said.read_text()  # quiet while healthy
        pid = real.record()["pid"]
        os.killpg(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (said.exists() and "engine-died" in said.read_text()):
            time.sleep(0.2)
        change = json.loads(said.read_text().splitlines()[0])
        assert change["kind"] == "engine-died" and change["state"] == "fired", change
        assert f"tiny: the vLLM process is gone (pid {pid})" in change["text"]
        watch.send_signal(signal.SIGTERM)
        out, _ = watch.communicate(timeout=60)
        assert watch.returncode == 0 and "Traceback" not in out, out
        report = json.loads(real.rigctl("report", "--json", timeout=60).stdout)
        assert [(e["kind"], e["state"]) for e in report["alerts"]] == [("engine-died", "fired")]
    finally:
        config.write_text(kept)
        if watch is not None and watch.poll() is None:
            watch.kill()
            watch.communicate(timeout=60)


def wait_for(condition: Callable[[], bool], watch: subprocess.Popen[str], limit_s: float = 120) -> None:
    """Until `condition` holds, while the watch still runs; a watch that exited fails with its output."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if watch.poll() is not None:
            out, _ = watch.communicate()
            raise AssertionError(f"the watch exited with {watch.returncode}: {out}")
        assert time.monotonic() < deadline, f"not seen in {limit_s:.0f} s"
        time.sleep(0.5)


def rows(real: RealRig) -> list[tuple[float, float]]:
    """(ts, generation tokens) of each row recorded."""
    db = real.state_dir / "record.sqlite"
    if not db.is_file():
        return []
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT ts, generation_tokens FROM samples ORDER BY ts"))
