"""The TUI bench screen's line for a running bench: the arm, its progress, and the whole run's ETA
(a floor while a part is unknown), as the CLI's progress line says it."""

from __future__ import annotations

from rigctl.bench.live import ArmProgress, LiveBench, run_eta
from rigctl.tui.screens.bench import live_text


def live(progress: ArmProgress) -> LiveBench:
    return LiveBench("seqs", "/tmp/run", 4242, 1000.0, 1090.0, progress, "seqs2", "seqs8")


def test_the_line_has_the_arm_and_the_whole_runs_eta() -> None:
    p = ArmProgress(2, 3, "candidate", "seqs8", "measuring", 12, 32, 410.0, 30.0, run_eta_s=150.0)
    text = live_text(live(p))
    assert text.startswith("bench seqs (pid 4242): arm 2/3 B seqs8: measuring 12/32  410 tok/s  arm ETA 30.0 s")
    assert "run ETA 2.5 min" in text and text.endswith("[90.0 s in]")
    assert run_eta(p) == "  run ETA 2.5 min"


def test_a_floor_is_said_as_one() -> None:
    p = ArmProgress(1, 3, "control", "seqs2", "switching", run_eta_s=95.0, run_eta_floor=True)
    assert "run ETA ≥ 95.0 s" in live_text(live(p)) and run_eta(p) == "  run ETA ≥ 95.0 s"
    assert "run ETA" not in live_text(live(ArmProgress(1, 3, "control", "seqs2", "switching")))
