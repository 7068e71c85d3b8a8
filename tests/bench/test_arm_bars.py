"""The arms of a run as bars of its gate metric: the longest the best arm, an arm without the figure
an empty bar saying n/a, every line within the width."""

from __future__ import annotations

from rigctl.bench.arm_bars import EMPTY, FULL, arm_bars


def test_bars_scale_to_the_best_arm_and_fit_the_width() -> None:
    data = {
        "gate": {"metric": "output_tok_per_s"},
        "arms": [
            {"role": "control", "profile": "seqs2", "output_tok_per_s": 200.0},
            {"role": "candidate", "profile": "seqs8", "output_tok_per_s": 400.0},
            {"role": "control", "profile": "seqs2", "output_tok_per_s": None},
        ],
    }
    lines = arm_bars(data, 60)
    assert lines[0].endswith("by arm (the gate):")
    control, candidate, failed = lines[1:]
    assert control.startswith("1 control   seqs2") and candidate.startswith("2 candidate seqs8")
    assert abs(candidate.count(FULL) - 2 * control.count(FULL)) <= 1 and EMPTY not in candidate  # (rounded to a cell)
    assert FULL not in failed and failed.rstrip().endswith("n/a")
    assert all(len(line) <= 60 for line in lines[1:])
