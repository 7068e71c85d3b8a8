"""Boot records, one JSON line per successful boot: the table owners keep by hand."""

from __future__ import annotations

import hashlib
import json
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rigctl import jsonio, paths
from rigctl.profiles.schema import Profile

HISTORY_LIMIT = 64 * 1024 * 1024  # a boot is ~600 bytes: a hundred thousand boots


@dataclass(frozen=True)
class BootRecord:
    profile: str
    profile_hash: str
    when: float
    argv: list[str]  # redacted
    vllm_version: str | None
    rig: str | None
    kv_tokens: int | None  # "KV capacity at max_model_len" (vLLM's figure; for hybrid models concurrency x len)
    max_concurrency: float | None
    max_model_len: int | None
    available_kv_gib: float | None
    model_load_gib: float | None
    model_load_seconds: float | None
    graph_capture_seconds: float | None
    boot_seconds: float
    verification: dict[str, Any] | None = None  # what was verified once it was ready (or why not)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def boots_file() -> Path:
    """history.jsonl: the name the file has had from the start (owners keep it)."""
    return paths.state_dir() / "history.jsonl"


def profile_hash(profile: Profile) -> str:
    """A hash of what the profile resolves to, so two boots of 'the same' profile can be told apart."""
    content = json.dumps({"model": profile.model, "vllm": profile.vllm, "env": profile.env}, sort_keys=True, default=str)
    return hashlib.sha256(content.encode()).hexdigest()[:12]


def append(record: BootRecord) -> None:
    paths.ensure_private_dir(paths.state_dir())
    jsonio.append_line(boots_file(), record.to_json())


@dataclass(frozen=True)
class History:
    records: list[BootRecord]
    damaged_lines: list[int]  # 1-based line numbers that are not a boot record

    def warning(self) -> str | None:
        if not self.damaged_lines:
            return None
        shown = ", ".join(str(n) for n in self.damaged_lines[:5]) + (", ..." if len(self.damaged_lines) > 5 else "")
        return f"{boots_file()}: skipped {len(self.damaged_lines)} damaged line(s) ({shown})"


def read_history() -> History:
    return History(*jsonio.read_lines(boots_file(), BootRecord, HISTORY_LIMIT))


def read_all() -> list[BootRecord]:
    """The boot records that could be read (damaged lines skipped: read_history names them)."""
    return read_history().records


@dataclass(frozen=True)
class BootEstimate:
    seconds: float  # the median of the boots it is drawn from
    boots: int

    def describe(self, elapsed: float) -> str:
        """`elapsed` against the estimate, for the boot panel: never a promise, a measured median."""
        of = f"{elapsed:.0f} s of ~{self.seconds:.0f} s"
        return of + (f" (its last {self.boots} boots' median)" if self.boots > 1 else " (its last boot)")


def expected_boot(records: list[BootRecord], profile: str, last: int = 5) -> BootEstimate | None:
    """How long `profile` takes to boot, from its last boots (a cold first boot, torch.compile's
    cache filling, is one of them only until others follow); None before its first."""
    mine = [r.boot_seconds for r in records if r.profile == profile][-last:]
    if not mine:
        return None
    return BootEstimate(statistics.median(mine), len(mine))
