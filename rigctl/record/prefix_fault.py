"""Whose fault a prefix-cache collapse is, from the front door's recording: the share of each
client's prompts that repeated its earlier prompts (rigctl.gateway.reuse), before and after.

A client whose reuse fell with the hit rate changed its prompts (a system prompt with the time
in it, tools reordered): no server keeps a cache of text that never comes again. Prompts that kept
their prefix while the hit rate fell lost it to the server: its pool evicted what it would have hit.
Without a recording that covers both sides, nothing is said.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rigctl.gateway.recording import recorded_files
from rigctl.record.derive import Regression

MIN_REQUESTS = 5  # of a client on each side, for its reuse to be compared
FELL = 0.20  # a fall of 20 points of reuse is the client's change
KEPT = 0.50  # reuse at least this high after: the prompts kept their prefix


@dataclass
class Reuse:
    requests: int = 0
    prompt_chars: int = 0
    reused_chars: int = 0

    @property
    def share(self) -> float:
        return self.reused_chars / self.prompt_chars if self.prompt_chars else 0.0


def recorded_reuse(files: Sequence[Path], since: float, until: float) -> dict[str, Reuse]:
    """Per client, the prompts the door recorded between since and until (wall-clock seconds)."""
    out: dict[str, Reuse] = {}
    for path in files:
        started = _file_start(path)
        if started is None or started > until:
            continue
        try:
            with path.open("rb") as lines:
                next(lines, None)  # the header
                for line in lines:
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue  # a line cut by a full disk on another writer: left out
                    if not isinstance(entry, dict):
                        continue
                    at, chars, reused = entry.get("t"), entry.get("prompt_chars"), entry.get("reused_chars")
                    if not (isinstance(at, (int, float)) and isinstance(chars, int) and isinstance(reused, int)):
                        continue
                    if since <= started + at <= until:
                        seen = out.setdefault(str(entry.get("client") or "unnamed"), Reuse())
                        seen.requests += 1
                        seen.prompt_chars += chars
                        seen.reused_chars += reused
        except OSError:
            continue
    return out


def _file_start(path: Path) -> float | None:
    try:
        with path.open("rb") as lines:
            head = json.loads(next(lines, b"{}"))
    except (OSError, ValueError):
        return None
    started = head.get("started") if isinstance(head, dict) else None
    return float(started) if isinstance(started, (int, float)) and not isinstance(started, bool) else None


def cause(before: dict[str, Reuse], after: dict[str, Reuse]) -> str:
    """The sentence for a collapse between two spans of recorded prompts ("" where it cannot be told)."""
    compared = [c for c in before if c in after and min(before[c].requests, after[c].requests) >= MIN_REQUESTS]
    if not compared:
        return ""
    changed = [c for c in compared if before[c].share - after[c].share >= FELL]
    if changed:
        worst = max(changed, key=lambda c: before[c].share - after[c].share)
        return (
            f"the client {worst} changed its prompt prefix (reuse fell from {before[worst].share:.0%} to "
            f"{after[worst].share:.0%} of the prompt, as the front door saw it): the cache had nothing to hit"
        )
    was = sum(before[c].reused_chars for c in compared) / max(1, sum(before[c].prompt_chars for c in compared))
    now = sum(after[c].reused_chars for c in compared) / max(1, sum(after[c].prompt_chars for c in compared))
    if now >= KEPT:
        return (
            f"the prompts kept their prefix (reuse {was:.0%} before, {now:.0%} after, as the front door saw it) and the "
            "cache lost it: evictions (a smaller KV pool, or max-num-seqs running more sequences than the pool keeps)"
        )
    return ""


def explain(regression: Regression, folder: Path | None = None) -> Regression:
    """`regression` with its cause, where the door's recording covers both sides of the switch."""
    files = recorded_files(folder)
    if not files or not regression.previous_start:
        return regression
    end = regression.current_end or time.time()
    before = recorded_reuse(files, regression.previous_start, regression.switched_at)
    after = recorded_reuse(files, regression.switched_at, end)
    said = cause(before, after)
    return dataclasses.replace(regression, cause=said) if said else regression
