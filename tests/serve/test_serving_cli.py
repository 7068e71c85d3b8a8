"""The serving commands as separate processes: what an owner over SSH or a cron job sees."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support import present
from tests.support.serving import UNPREDICTED_MODEL, add_profile, rigctl


def test_switch_then_status_names_it_then_rollback_exit_3(env: dict[str, str], profiles: Path, port: int) -> None:
    ok = rigctl(env, "switch", "good")
    assert ok.returncode == 0, ok.stderr
    assert "switched to good" in ok.stdout and "KV capacity at 131,072:" in ok.stdout
    status = json.loads(rigctl(env, "status", "--json").stdout)
    assert status["serving"]["active_profile"] == "good"
    assert status["serving"]["server"]["healthy"] is True
    # the bench's rule: only the boot's verification (a chat completion) has reached the cache
    cache = status["prefix_cache"]
    assert cache["cold"] is True and cache["queries"] > 0, cache
    assert cache["summary"].startswith("cold: after the restart only the boot's verification")
    add_profile(profiles, "long", "", port, top=UNPREDICTED_MODEL)
    failed = rigctl(env, "switch", "long")
    assert failed.returncode == 3
    assert "max_model_len 131,072" in failed.stderr and "vLLM estimates" in failed.stderr
    assert "To serve at least one request" in failed.stdout  # the line that explains why
    models = httpx.get(f"http://127.0.0.1:{port}/v1/models").json()
    assert models["data"][0]["max_model_len"] == 131072  # the previous profile answers
    history = json.loads(rigctl(env, "history", "--json").stdout)
    assert [h["profile"] for h in history] == ["good", "good"]  # the boot, then the rollback's boot


def test_invalid_profile_exits_2_and_touches_nothing(env: dict[str, str], profiles: Path, port: int) -> None:
    add_profile(profiles, "typo", "max_num_seq = 8\n", port)
    result = rigctl(env, "switch", "typo")
    assert result.returncode == 2 and "did you mean max_num_seqs" in result.stderr
    assert "nothing serves" in json.loads(rigctl(env, "status", "--json").stdout)["serving"]["summary"]


def test_rigctl_killed_mid_switch_reports_honestly(env: dict[str, str], profiles: Path, port: int) -> None:
    assert rigctl(env, "switch", "good").returncode == 0
    add_profile(profiles, "stuck", '[env]\nRIGCTL_SIM_HANG_AT = "graphs"\n', port)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigctl", "switch", "stuck"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 30
    for line in present(proc.stdout):  # wait until the new server is booting
        if "KV cache allocated" in line or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    status = json.loads(rigctl(env, "status", "--json").stdout)["serving"]
    assert status["active_profile"] is None  # no stale "active" claim
    assert "a switch to stuck was interrupted" in status["summary"]
    assert "a server for stuck is running, not answering" in status["summary"]
    assert status["server"]["profile"] == "stuck" and status["server"]["alive"] is True
    stopped = rigctl(env, "stop")  # a later rigctl adopts and stops what the killed one started
    assert stopped.returncode == 0 and "stopped stuck" in stopped.stdout
    assert "nothing serves" in json.loads(rigctl(env, "status", "--json").stdout)["serving"]["summary"]


def test_logs_and_start_after_stop(env: dict[str, str], profiles: Path) -> None:
    assert rigctl(env, "switch", "good").returncode == 0
    logs = rigctl(env, "logs", "-n", "12")  # (the verification's requests follow the start)
    assert logs.returncode == 0 and "Application startup complete." in logs.stdout
    assert rigctl(env, "stop").returncode == 0
    started = rigctl(env, "start")  # the last good profile
    assert started.returncode == 0 and "switched to good" in started.stdout
