"""Whose fault a hit-rate collapse is, said by `rigctl report` from the record and the front
door's recording (real files, written by the recorder and the door's Recording): a client that
changed its system prompt at the switch, against prompts that kept their prefix while the new
profile's cache lost it. Without a recording, only the collapse is said."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rigctl.gateway.recording import RecordBounds, Recording
from rigctl.record.store import RecordWriter
from tests.record.test_derive import row

CASES = {
    "client": ((0.95, 0.05), "the client agent/1.0 changed its prompt prefix (reuse fell from 95% to 5% of the prompt"),
    "server": ((0.95, 0.94), "the prompts kept their prefix (reuse 95% before, 94% after"),
}


def report(home: Path) -> str:
    env = {**os.environ, "RIGCTL_STATE_DIR": str(home / "state"), "RIGCTL_CONFIG_DIR": str(home / "config")}
    done = subprocess.run([sys.executable, "-m", "rigctl", "report"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def rig_with_a_collapse(home: Path) -> float:
    """The record: profile a at a 90% hit rate, then b at 10% (a switch at now - 1000)."""
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text("[record]\nwarmup_s = 0\nmin_prefix_queries = 1000\n")
    now = time.time()
    writer = RecordWriter(home / "state" / "record.sqlite")
    for k in range(10):
        writer.add(row(now - 2000 + 10 * k, "a", "b1", 1000, 900))
        writer.add(row(now - 1000 + 10 * k, "b", "b2", 1000, 100))
    writer.close()
    return now


@pytest.mark.parametrize("case", list(CASES))
def test_the_report_says_whose_fault_the_collapse_is(tmp_path: Path, case: str) -> None:
    (share_before, share_after), said = CASES[case]
    now = rig_with_a_collapse(tmp_path)
    started = now - 2100
    recording = Recording(tmp_path / "state" / "gateway-traces", "http://127.0.0.1:8000", RecordBounds(), print, lambda: started)
    for k in range(8):
        for at, share in ((now - 1990 + 10 * k, share_before), (now - 990 + 10 * k, share_after)):
            body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
            entry = {"endpoint": "/v1/chat/completions", "body": body, "status": 200, "client": "agent/1.0"}
            recording.keep(at, {**entry, "prompt_chars": 10_000, "reused_chars": int(10_000 * share)})
    recording.close()
    out = report(tmp_path)
    assert "prefix hit rate fell from 90.0% (a) to 10.0% (b)" in out, out
    assert said in out, out


def test_without_the_doors_recording_only_the_collapse_is_said(tmp_path: Path) -> None:
    rig_with_a_collapse(tmp_path)
    out = report(tmp_path)
    assert "prefix hit rate fell from 90.0% (a) to 10.0% (b)" in out, out
    assert "changed its prompt prefix" not in out and "kept their prefix" not in out, out
