"""Every serving action's ending, one JSON line each (switches.jsonl in the state dir): what the
exporter counts by outcome and says of the last switch (when, how it ended, what its drain saw
running and cut, what its verification found). Written by the process that acted, under the rig
lock; bounded by a rewrite that keeps the newer half."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from rigctl import jsonio, paths
from rigctl.atomic import write_text_atomic

SwitchStatus = Literal["switched", "rolled_back", "rollback_failed", "failed", "refused", "stopped", "interrupted"]
Action = Literal["switch", "bench", "stop"]  # bench: an arm of `rigctl bench` (its switches roll back to its control)
JOURNAL_LIMIT = 2 * 1024 * 1024  # ~8,000 endings; at twice this the older half goes


@dataclass(frozen=True)
class Ending:
    when: float
    action: Action
    status: SwitchStatus
    target: str  # the profile switched to (a stop: the one stopped)
    seconds: float
    finished: int | None = None  # requests seen to finish during the drain (None: nothing saw them: no front door)
    cut: int | None = None  # requests still running when the server stopped (None: no drain, or unknown)
    running: int | None = None  # requests running or waiting when the drain began, by vLLM's gauges
    held: int | None = None  # requests the front door held through it (None: no front door)
    held_longest_s: float | None = None  # the longest any of them waited
    refused: int | None = None  # requests the front door answered 503 (a bound, the deadline, nothing serving)
    verified: bool | None = None  # the new boot's verification passed (None: not verified, or no boot)
    verify_failed: str | None = None  # the check that failed, as the verification said it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def journal_file() -> Path:
    return paths.state_dir() / "switches.jsonl"


def append_ending(ending: Ending) -> None:
    """Add one ending; OSError for the caller to say (an action is never undone by its journal)."""
    paths.ensure_private_dir(paths.state_dir())
    path = journal_file()
    jsonio.append_line(path, ending.to_json())
    try:
        too_big = path.stat().st_size > JOURNAL_LIMIT
    except OSError:
        return
    if too_big:
        endings, _ = read_endings()
        kept = endings[len(endings) // 2 :]
        write_text_atomic(path, "".join(jsonio.dumps(e.to_json(), sort_keys=True) + "\n" for e in kept), mode=0o600)


def read_endings() -> tuple[list[Ending], list[int]]:
    """The endings that could be read, oldest first, and the damaged lines skipped."""
    return jsonio.read_lines(journal_file(), Ending, 2 * JOURNAL_LIMIT)


@dataclass(frozen=True)
class JournalSummary:
    counts: dict[tuple[Action, SwitchStatus], int]
    last_switch: Ending | None  # the newest switch or bench arm (not a stop)
    last: Ending | None  # the newest of any action


def summarize(endings: list[Ending]) -> JournalSummary:
    counts = Counter((e.action, e.status) for e in endings)
    switches = [e for e in endings if e.action != "stop"]
    return JournalSummary(dict(counts), switches[-1] if switches else None, endings[-1] if endings else None)


class JournalReader:
    """The summary, read again only when the file changed (an exporter asked every few seconds)."""

    def __init__(self) -> None:
        self._seen: tuple[int, int, int] | None = None
        self._summary = summarize([])

    def summary(self) -> JournalSummary:
        try:
            st = os.stat(journal_file())
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            return summarize([])
        if stamp != self._seen:
            try:
                self._summary = summarize(read_endings()[0])
            except jsonio.DamagedFile:
                self._summary = summarize([])
            self._seen = stamp
        return self._summary
