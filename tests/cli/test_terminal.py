"""The TUI on a terminal it cannot draw on (TERM=dumb, a pipe) is refused in one line that points
at the text commands, before anything is started."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from rigctl.cli.tui import terminal_problem


def test_the_rule() -> None:
    assert terminal_problem("xterm-256color", True) is None and terminal_problem("screen", True) is None
    assert "TERM=dumb" in (terminal_problem("dumb", True) or "")
    assert "TERM=(unset)" in (terminal_problem(None, True) or "")
    assert "not a terminal" in (terminal_problem("xterm", False) or "")


@pytest.mark.parametrize("command", [[], ["demo"]], ids=["rigctl", "rigctl demo"])
def test_term_dumb_is_one_line_and_starts_nothing(isolated_dirs: Path, command: list[str]) -> None:
    primary, secondary = pty.openpty()
    env = {**os.environ, "TERM": "dumb", "RIGCTL_SIM": "2x3090-nvlink"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "rigctl", *command],
            env=env,
            stdin=secondary,
            stdout=secondary,
            stderr=subprocess.PIPE,
            timeout=60,
            text=True,
        )
    finally:
        os.close(secondary)
        os.close(primary)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "rigctl: TERM=dumb is a terminal the TUI cannot draw on: `rigctl status` and `rigctl gpus --watch` show the rig as text"
    )
    assert not list((isolated_dirs / "state").rglob("server.json"))  # no simulator was started


def test_a_pipe_is_refused_too(isolated_dirs: Path) -> None:
    env = {**os.environ, "TERM": "xterm", "RIGCTL_SIM": "2x3090-nvlink"}
    done = subprocess.run([sys.executable, "-m", "rigctl"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "standard output is not a terminal" in done.stderr and done.stderr.count("\n") == 1
