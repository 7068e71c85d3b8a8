"""A kept run: $XDG_STATE_HOME/rigctl/bench/<timestamp>-<plan>/, everything raw.

    plan.toml                      the plan as it was run
    run.json                       when, where, the plan as resolved (defaults filled in)
    arm-N-ROLE.requests.jsonl      one line per measured request (vllm bench serve's fields)
    arm-N-ROLE.samples.jsonl       KV usage, running/waiting, GPU temperature/power/energy
    arm-N-ROLE.metrics-cold.prom   /metrics right after the restart (the cold-cache proof)
    arm-N-ROLE.metrics-before.prom /metrics after the warm-up, as the measured window began
    arm-N-ROLE.metrics-after.prom  /metrics as it ended
    arm-N-ROLE.json                the arm: profile, boot record, cold check, figures
    verdict.json                   what `rigctl bench --json` printed

Every file is written whole (a temp file, then a rename), so a run cut short keeps the
arms it finished and nothing half-written.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigctl import jsonio, paths
from rigctl.atomic import write_text_atomic


def bench_dir() -> Path:
    return paths.state_dir() / "bench"


def live_file() -> Path:
    """The running bench's progress (bench/live.py writes and reads it); `status` looks for it
    before it imports that reader."""
    return bench_dir() / "live.json"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "plan"


@dataclass(frozen=True)
class RawDir:
    path: Path

    @staticmethod
    def create(plan_name: str, when: float | None = None) -> RawDir:
        paths.ensure_private_dir(bench_dir())
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when or time.time()))
        base = bench_dir() / f"{stamp}-{_slug(plan_name)}"
        path, n = base, 1
        while True:
            try:
                path.mkdir(mode=0o700)
                return RawDir(path)
            except FileExistsError:
                n += 1
                path = base.with_name(f"{base.name}.{n}")

    def arm_stem(self, number: int, role: str) -> str:
        return f"arm-{number}-{role}"

    def write_text(self, name: str, text: str) -> Path:
        target = self.path / name
        write_text_atomic(target, text, 0o600)
        return target

    def write_json(self, name: str, value: Any) -> Path:
        return self.write_text(name, jsonio.dumps(value, indent=2) + "\n")

    def write_lines(self, name: str, values: Iterable[Any]) -> Path:
        return self.write_text(name, "".join(jsonio.dumps(v, sort_keys=True) + "\n" for v in values))

    def read_json(self, name: str) -> Any:
        return json.loads((self.path / name).read_text())

    def read_lines(self, name: str) -> list[Any]:
        target = self.path / name
        if not target.exists():
            return []
        return [json.loads(line) for line in target.read_text().splitlines() if line.strip()]

    def read_text(self, name: str) -> str | None:
        try:
            return (self.path / name).read_text()
        except FileNotFoundError:
            return None


def kept_runs() -> list[RawDir]:
    """Kept runs, oldest first (the names sort by time)."""
    if not bench_dir().is_dir():
        return []
    return [RawDir(p) for p in sorted(bench_dir().iterdir()) if p.is_dir() and (p / "run.json").exists()]
