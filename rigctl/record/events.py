"""The alerts in the record: a row per change (fired, cleared, or an event such as a supervisor's
restart), kept beside the samples and dropped with them after the retention, so `rigctl report`
says when each alert fired and for how long."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from rigctl.alerts.model import AlertChange

CREATE = """CREATE TABLE IF NOT EXISTS events (
    ts REAL NOT NULL, state TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, severity TEXT NOT NULL,
    title TEXT NOT NULL, text TEXT NOT NULL, profile TEXT)"""
COLUMNS = ("ts", "state", "kind", "key", "severity", "title", "text", "profile")


@dataclass(frozen=True)
class RecordedEvent:
    ts: float
    state: str  # fired | cleared | event
    kind: str
    key: str
    severity: str
    title: str
    text: str
    profile: str | None

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in COLUMNS}


def create(db: sqlite3.Connection) -> None:
    db.execute(CREATE)
    db.execute("CREATE INDEX IF NOT EXISTS events_ts ON events (ts)")


def insert(db: sqlite3.Connection, change: AlertChange) -> None:
    a = change.alert
    db.execute(
        f"INSERT INTO events VALUES ({','.join('?' * len(COLUMNS))})",
        (change.at, change.state, a.kind, a.key, a.severity, a.title, a.text, change.profile),
    )


def drop_before(db: sqlite3.Connection, oldest: float) -> int:
    return int(db.execute("DELETE FROM events WHERE ts <= ?", (oldest,)).rowcount)


def select(since: float | None, until: float | None) -> tuple[str, list[Any]]:
    """The query for the events in (since, until], oldest first."""
    where, args = ["1=1"], []
    for column, value in (("ts >", since), ("ts <=", until)):
        if value is not None:
            where.append(f"{column} ?")
            args.append(value)
    return f"SELECT {', '.join(COLUMNS)} FROM events WHERE {' AND '.join(where)} ORDER BY ts", args


def build(values: tuple[Any, ...]) -> RecordedEvent:
    return RecordedEvent(*values)


def render(recorded: list[RecordedEvent], limit: int = 20) -> list[str]:
    """The alerts as `rigctl report` lists them under its table, newest last; the oldest left out
    past `limit` (--json has them all)."""
    if not recorded:
        return []
    shown = recorded[-limit:]
    lines = [f"alerts ({len(recorded)} change{'s' if len(recorded) != 1 else ''}):"]
    if len(recorded) > len(shown):
        lines.append(f"  ... {len(recorded) - len(shown)} earlier (rigctl report --json lists them all)")
    for e in shown:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.ts))
        said = {"fired": "FIRED", "cleared": "cleared", "event": "event"}.get(e.state, e.state)
        lines.append(f"  {stamp}  {said:<7}  {e.title}: {e.text}" + (f" [{e.profile}]" if e.profile else ""))
    return lines
