"""A bench started from the TUI is `rigctl bench PLAN` as a process of its own: how it ended is
read from its exit code and the last line it printed, kept in a private file."""

from __future__ import annotations

import stat
from pathlib import Path

from rigctl.bench.launch import BenchEnding, LaunchedBench, output_file


def test_a_plan_that_does_not_exist_ends_as_the_cli_says_it(isolated_dirs: Path) -> None:
    ending = LaunchedBench("nosuch").wait()
    assert not ending.ok and ending.exit_code == 2
    assert ending.message().startswith("bench nosuch: it failed (exit 2): ") and "no plan named 'nosuch'" in ending.message()
    assert stat.S_IMODE(output_file().stat().st_mode) == 0o600


def test_the_bench_exit_codes_are_endings_not_failures() -> None:
    assert BenchEnding("p", 5, "rejected: -3% < +25%").message() == "bench p: the candidate was rejected: rejected: -3% < +25%"
    assert BenchEnding("p", 6, "").ok and BenchEnding("p", 0, "").message() == "bench p: the run ended"
    assert not BenchEnding("p", 1, "x").ok
