"""A bench started from the TUI: `rigctl bench PLAN` as a process of its own, exactly the command
an owner would type (the same checks, locks, live file and put-back), in a session of its own so
quitting the TUI or a Ctrl-C there never cuts it short. Its output goes to a private file; the
TUI follows the run through bench/live.json like any other, and says how it ended from the exit
code and the last line it printed."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rigctl import paths
from rigctl.errors import ExitCode, printable

ENDINGS: dict[int, str] = {
    ExitCode.OK: "the run ended",
    ExitCode.REJECTED: "the candidate was rejected",
    ExitCode.INCONCLUSIVE: "inconclusive",
}


def output_file() -> Path:
    return paths.state_dir() / "bench-from-tui.log"


@dataclass(frozen=True)
class BenchEnding:
    plan: str
    exit_code: int
    last_line: str

    @property
    def ok(self) -> bool:
        return self.exit_code in (ExitCode.OK, ExitCode.REJECTED, ExitCode.INCONCLUSIVE)

    def message(self) -> str:
        ending = ENDINGS.get(self.exit_code, f"it failed (exit {self.exit_code})")
        said = f"bench {self.plan}: {ending}"
        return f"{said}: {self.last_line}" if self.last_line else said


class LaunchedBench:
    def __init__(self, plan: str) -> None:
        self.plan = plan
        paths.ensure_private_dir(paths.state_dir())
        self.output = output_file()
        fd = os.open(self.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(
                [sys.executable, "-m", "rigctl", "bench", plan],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait(self) -> BenchEnding:
        """Block until the run ends; how it ended."""
        code = self.process.wait()
        try:
            lines = self.output.read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        return BenchEnding(self.plan, code, printable(last))
