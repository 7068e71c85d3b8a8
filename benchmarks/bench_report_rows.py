"""`rigctl report` over a record of N raw 10 s rows (default 1,000,000: a year at the recorder's
default interval, had the retention kept it raw): the wall time and the peak resident memory of
the command, summed by SQLite (rigctl/record/coarse.py). --exact also times reading the rows one
by one (rows(), as before coarse.py), in the same run.

Run:  python benchmarks/bench_report_rows.py [--rows 1000000] [--exact]
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rigctl.record.rows import Row, Timing  # noqa: E402
from rigctl.record.store import COLUMNS, RecordWriter, _values  # noqa: E402

MEASURE = (
    "import resource, runpy, sys, time\n"
    "sys.argv = ['rigctl', 'report', '--since', '4000d', '--json']\n"
    "began = time.monotonic()\n"
    "try:\n    runpy.run_module('rigctl', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    "print(time.monotonic() - began, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
)


def build(path: Path, count: int) -> None:
    timing = Timing(1.2, 4.0, ((0.5, 1.0, 3.0), (1.0, 2.5, 1.0)))
    start = time.time() - count * 10
    writer = RecordWriter(path, retention_days=10**6)
    counts = {"prefix_queries": 1000.0, "prefix_hits": 900.0, "generation_tokens": 500.0, "prompt_tokens": 1000.0}
    with writer.db:
        for first in range(0, count, 50_000):
            block = [
                Row(
                    start + i * 10,
                    10.0,
                    "a" if (i // 50_000) % 2 == 0 else "b",
                    f"boot{i // 50_000}",
                    100_000,
                    0.4,
                    4.0,
                    3.0,
                    0.0,
                    counts,
                    {"stop": 4.0},
                    {"ttft": timing, "e2e": timing},
                    2000.0,
                )
                for i in range(first, min(count, first + 50_000))
            ]
            writer.db.executemany(f"INSERT INTO samples VALUES ({','.join('?' * len(COLUMNS))})", [_values(r) for r in block])
    writer.close()


def measure(state: Path, exact: bool) -> tuple[float, float]:
    env = {**os.environ, "RIGCTL_STATE_DIR": str(state), "RIGCTL_CONFIG_DIR": str(state / "config")}
    if exact:
        env["RIGCTL_REPORT_ROWS_AT_MOST"] = str(10**9)
    done = subprocess.run([sys.executable, "-c", MEASURE], env=env, capture_output=True, text=True, check=True)
    seconds, peak_kib = done.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(peak_kib) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--exact", action="store_true", help="also read the rows one by one, as before")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        build(state / "record.sqlite", args.rows)
        size = (state / "record.sqlite").stat().st_size
        seconds, peak = measure(state, False)
        print(
            f"{args.rows:,} rows ({size / 1e6:.0f} MB): rigctl report {seconds:.1f} s, peak RSS {peak:.0f} MiB (summed by SQLite)"
        )
        if args.exact:
            seconds, peak = measure(state, True)
            print(f"{args.rows:,} rows, read one by one: {seconds:.1f} s, peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    main()
