"""Every serving action's ending, one JSON line each (switches.jsonl in the state dir): what the
exporter counts by outcome and says of the last switch (when, how it ended, what its drain saw
running and cut, what its verification found). Written by the process that acted, under the rig
lock; bounded by a rewrite that keeps the newer half."""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from rigctl import jsonio, paths
from rigctl.atomic import write_text_atomic
from rigctl.gateway.apps_seen import AppsSeen

SwitchStatus = Literal["switched", "rolled_back", "rollback_failed", "failed", "refused", "stopped", "interrupted"]
# bench: an arm of `rigctl bench` (its switches roll back to its control); adopt: a vLLM rigctl did not start, taken over
Action = Literal["switch", "bench", "stop", "adopt"]
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
    began: float | None = None  # an interrupted action's start, as its state said it (one ending each)
    apps_refused: str | None = None  # the apps' own first answers refused the new server: how (gateway/judge.py)

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


_NOTED: set[tuple[str, float]] = set()  # interrupted actions this process has already looked up


def note_interrupted(action: Action, target: str, began: float, apps: AppsSeen | None) -> bool:
    """An action whose process died (SIGKILL, a lost SSH session) wrote no ending: the first reader
    to see it dead writes one, status "interrupted", with what the front door says its apps saw
    (`apps`, None: no door, or the door did not know). One ending per action: whether it was
    written is looked up in the journal (once a process). True when this call wrote it."""
    key = (target, began)
    if key in _NOTED:
        return False
    _NOTED.add(key)
    try:
        endings, _ = read_endings()
    except jsonio.DamagedFile:
        endings = []
    if any(e.began == began and e.status == "interrupted" for e in endings[-64:]):
        return False
    now = time.time()
    ending = Ending(
        when=now,
        action=action,
        status="interrupted",
        target=target,
        seconds=round(max(0.0, now - began), 3),
        finished=apps.finished if apps else None,
        cut=apps.cut if apps else None,
        held=apps.held if apps else None,
        held_longest_s=apps.longest_s if apps else None,
        refused=apps.refused if apps else None,
        began=began,
    )
    try:
        append_ending(ending)
    except OSError:
        return False  # a read-only state dir: the next reader that can write will
    return True


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
