"""A long window summed by SQLite (record/coarse.py) says what the rows say: every count, peak,
energy and latency histogram of a record read row by row, here on 2,400 rows with a limit of 100;
and `rigctl report` over 300,000 rows stays in bounded memory."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rigctl.record.derive import Thresholds, by_boot, by_profile
from rigctl.record.reader import RecordReader
from rigctl.record.rows import COUNTED, Row, Timing
from rigctl.record.store import COLUMNS, RecordWriter, _values

LIMITS = Thresholds(warmup_s=0, min_prefix_queries=1)


def rows(count: int, seed: int = 7) -> list[Row]:
    rng = random.Random(seed)
    now = time.time()
    out = []
    for i in range(count):
        boot = f"boot{i // 600}"
        ttft = Timing(rng.uniform(0, 5), 3.0, ((0.1, 0.5, 1.0), (0.5, 1.0, float(rng.randint(0, 3))), (2.5, "+Inf", 1.0)))
        out.append(
            Row(
                now - (count - i) * 10,
                10.0,
                "a" if (i // 600) % 2 == 0 else "b",
                boot,
                rng.choice((None, 100_000, 120_000)),
                rng.choice((None, rng.random())),
                rng.uniform(0, 10),
                float(rng.randint(0, 8)),
                float(rng.randint(0, 3)),
                {k: float(rng.randint(0, 1000)) for k in COUNTED},
                {"stop": float(rng.randint(0, 4)), "length": float(rng.randint(0, 1))},
                {"ttft": ttft, "e2e": ttft} if rng.random() < 0.9 else {},
                rng.choice((None, rng.uniform(100, 3000))),
            )
        )
    return out


def write(path: Path, made: list[Row]) -> None:
    writer = RecordWriter(path, retention_days=10**6)
    with writer.db:
        writer.db.executemany(f"INSERT INTO samples VALUES ({','.join('?' * len(COLUMNS))})", [_values(r) for r in made])
    writer.close()


def test_the_buckets_say_what_the_rows_say(tmp_path: Path) -> None:
    path = tmp_path / "record.sqlite"
    write(path, rows(2_400))
    reader = RecordReader(path)
    exact = by_profile(reader.rows(), limits=LIMITS)
    summed_rows = reader.rows_at_most(most=100)
    assert 50 <= len(summed_rows) <= 140  # the buckets, not the rows
    summed = by_profile(summed_rows, limits=LIMITS)
    for one, other in zip(exact, summed, strict=True):
        for name in ("requests", "prefix_queries", "prefix_hits", "preemptions", "truncated", "generation_tokens", "pool_tokens"):
            assert getattr(one, name) == pytest.approx(getattr(other, name)), name
        assert one.peak_resident_tokens == pytest.approx(other.peak_resident_tokens, abs=1) and one.boots == other.boots
        assert one.mean_power_w == pytest.approx(other.mean_power_w) and one.j_per_token == pytest.approx(other.j_per_token)
        for label, figures in one.latency.items():  # means and p95s from the merged histograms
            assert figures == pytest.approx(other.latency[label]), label
    assert [c.boots for c in by_boot(reader.rows(), LIMITS)] == [c.boots for c in by_boot(summed_rows, LIMITS)]


def test_a_window_under_the_limit_is_read_row_by_row(tmp_path: Path) -> None:
    path = tmp_path / "record.sqlite"
    made = rows(300)
    write(path, made)
    reader = RecordReader(path)
    assert reader.rows_at_most(most=1_000) == reader.rows() and len(reader.rows()) == 300


@pytest.mark.slow
def test_report_over_300_000_rows_stays_in_bounded_memory(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    made = rows(2_000)
    write(state / "record.sqlite", [])
    writer = RecordWriter(state / "record.sqlite", retention_days=10**6)
    start = made[0].ts - 300_000 * 10
    with writer.db:
        for block in range(150):
            shifted = [
                Row(start + (block * 2_000 + k) * 10, *(getattr(r, f) for f in Row.__slots__[1:])) for k, r in enumerate(made)
            ]
            writer.db.executemany(f"INSERT INTO samples VALUES ({','.join('?' * len(COLUMNS))})", [_values(r) for r in shifted])
    writer.close()
    env = {**os.environ, "RIGCTL_STATE_DIR": str(state), "RIGCTL_CONFIG_DIR": str(tmp_path / "config")}
    script = (
        "import resource, runpy, sys\n"
        "sys.argv = ['rigctl', 'report', '--since', '400d', '--json']\n"
        "try:\n    runpy.run_module('rigctl', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert '"profiles"' in done.stdout, done.stderr
    peak_mib = int(done.stderr.strip().splitlines()[-1]) / 1024
    assert peak_mib < 200, f"rigctl report over 300,000 rows peaked at {peak_mib:.0f} MiB"
