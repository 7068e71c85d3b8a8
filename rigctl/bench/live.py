"""The running bench, for whoever looks (the TUI's bench screen, `rigctl bench list`):
state_dir/bench/live.json, rewritten at most twice a second while a run goes, removed at
its end. Its owner's pid tells a live run from one that died without cleaning up."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from rigctl import jsonio
from rigctl.atomic import write_text_atomic
from rigctl.bench.arm import ArmProgress
from rigctl.bench.rawdir import bench_dir

PERIOD = 0.5


def live_file() -> Path:
    return bench_dir() / "live.json"


@dataclass(frozen=True)
class LiveBench:
    plan: str
    raw_dir: str
    pid: int
    started: float
    updated: float
    progress: ArmProgress

    def elapsed(self) -> float:
        return self.updated - self.started


class LiveWriter:
    def __init__(self, plan: str, raw_dir: Path) -> None:
        self.plan, self.raw_dir = plan, str(raw_dir)
        self.started = time.time()
        self._last = 0.0

    def __call__(self, progress: ArmProgress) -> None:
        now = time.monotonic()
        if now - self._last < PERIOD and progress.phase == "measuring":
            return
        self._last = now
        data = {"plan": self.plan, "raw_dir": self.raw_dir, "pid": os.getpid(), "started": self.started,
                "updated": time.time(), "progress": asdict(progress)}
        try:
            write_text_atomic(live_file(), jsonio.dumps(data), 0o600)
        except OSError:
            pass  # a courtesy for onlookers; the run's own files are what count

    def close(self) -> None:
        try:
            live_file().unlink()
        except OSError:
            pass


def read_live() -> LiveBench | None:
    """The bench running on this rig now, or None (none, or its owner is gone)."""
    data: dict[str, Any] | None
    try:
        data = jsonio.read_object(live_file())
    except jsonio.DamagedFile:
        return None
    if not data:
        return None
    try:
        pid = int(data["pid"])
        if not psutil.pid_exists(pid):
            return None
        return LiveBench(str(data["plan"]), str(data["raw_dir"]), pid, float(data["started"]),
                         float(data["updated"]), ArmProgress(**data["progress"]))
    except (KeyError, TypeError, ValueError):
        return None
