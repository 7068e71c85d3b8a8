"""What the serving record costs: the recorder's CPU per hour and bytes per day at its 10 s
default, and `rigctl report` over 30 days of data.

  recorder   `rigctl record --interval 1` as a subprocess for --seconds against the simulator
             under its load generator (each row is five scrapes and one insert whatever the
             interval, so the cost per row at 1 s is the cost per row at 10 s); its CPU from
             psutil, less its start-up (measured the same way with nothing to record)
  bytes      the file's growth per row, times 8,640 rows a day; at 30 days: a day of raw rows
             and 29 of 5-minute rows (the retention's steady state)
  report     30 days of rows (built from the rows just recorded, shifted back in time; two
             profiles, a switch a day) in a fresh record, then `rigctl report --json`, median of 5

Run:  python benchmarks/bench_record.py [--seconds 60]
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/: figures
from figures import figure  # noqa: E402

from rigctl.record.reader import RecordReader  # noqa: E402
from rigctl.record.rows import DOWNSAMPLED_S, downsample  # noqa: E402
from rigctl.record.store import RecordWriter  # noqa: E402
from tests.record.test_recorder_sim import RecordRig  # noqa: E402


def cpu_of(proc: subprocess.Popen[str]) -> float:
    times = psutil.Process(proc.pid).cpu_times()
    return times.user + times.system


def record_for(rig: RecordRig, seconds: float) -> tuple[float, int]:
    proc = rig.recorder()
    rig.wait_for(proc, "recording to")
    time.sleep(seconds)
    cpu = cpu_of(proc)
    proc.send_signal(signal.SIGTERM)
    rig.finish(proc)
    with sqlite3.connect(rig.db) as db:
        (rows,) = db.execute("SELECT count(*) FROM samples").fetchone()
    return cpu, rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        idle = RecordRig(Path(tmp) / "idle")
        startup, _ = record_for(idle, 3.0)  # nothing serves: start-up and the idle loop only
        idle.cleanup()
        rig = RecordRig(Path(tmp) / "home")
        try:
            assert rig.rigctl("start", "good").returncode == 0
            rig.load.start()
            cpu, rows = record_for(rig, args.seconds)
            rig.load.stop()
            recorded = RecordReader(rig.db).rows()
        finally:
            rig.load.stop()
            rig.cleanup()
        per_row = max(0.0, cpu - startup) / max(rows, 1)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}")
        print(
            f"recorder: {rows} rows in {args.seconds:.0f} s under load, {per_row * 1000:.2f} ms CPU a row "
            f"(start-up {startup:.2f} s apart) -> {per_row * 360:.2f} s CPU an hour at 10 s "
            f"({per_row * 360 / 36:.3f}% of a core)"
        )
        figure("record.row_ms", f"{per_row * 1000:.1f} ms")
        figure("record.hour_s", f"{per_row * 360:.1f} s")
        figure("record.core_pct", f"{per_row * 360 / 36:.2f}%")
        busy = [r for r in recorded if r.timings]

        home = Path(tmp) / "thirty"
        state = home / "state" / "rigctl"
        state.mkdir(parents=True)
        env = {
            **os.environ,
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_CACHE_HOME": str(home / "cache"),
        }
        writer = RecordWriter(state / "record.sqlite")
        now, template = time.time(), busy or recorded
        day_rows = 0
        for day in range(30):
            profile = "good" if day % 2 else "alt"
            boot = f"{profile}@{day}"
            start = now - (day + 1) * 86400
            if day == 0:  # the last day: raw rows every 10 s
                for i in range(8640):
                    writer.add(replace(template[i % len(template)], ts=start + 10 * i, profile=profile, boot=boot))
                    day_rows += 1
            else:
                for i in range(288):
                    block = [
                        replace(r, ts=start + DOWNSAMPLED_S * i + 10 * k, profile=profile, boot=boot)
                        for k, r in enumerate(template[:30])
                    ]
                    writer.add(downsample(block))
                    day_rows += 1
            if day == 0:
                writer.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                raw_day = (state / "record.sqlite").stat().st_size
        writer.close()
        size = (state / "record.sqlite").stat().st_size
        print(
            f"bytes: a day of raw rows at 10 s (8,640, built from the {len(busy)} recorded with traffic) "
            f"{raw_day / 1e6:.1f} MB; 30 days (a day raw, 29 at 5 min) {size / 1e6:.1f} MB"
        )
        figure("record.day_mb", f"{raw_day / 1e6:.1f} MB")
        figure("record.month_mb", f"{size / 1e6:.1f} MB")
        walls = []
        for _ in range(5):
            began = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "rigctl", "report", "--json", "--since", "31d"], env=env, check=True, capture_output=True
            )
            walls.append(time.perf_counter() - began)
        print(
            f"report: {day_rows:,} rows over 30 days ({size / 1e6:.1f} MB file), `rigctl report --json --since 31d` "
            f"{statistics.median(walls) * 1000:.0f} ms wall, median of 5"
        )
        figure("record.report_rows", f"{day_rows:,}")
        figure("record.report_s", f"{statistics.median(walls):.1f} s")


if __name__ == "__main__":
    main()
