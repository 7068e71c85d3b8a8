"""The record's SQLite file in the state dir: one writer at a time, WAL (a SIGKILL mid-write
loses at most the row being written), bounded by downsampling and retention.

    raw rows (one per interval, 10 s by default) for a day, then one row per 5 minutes per
    profile and boot, dropped after the retention (30 days by default)
"""

from __future__ import annotations

import fcntl
import gc
import json
import os
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rigctl import paths
from rigctl.errors import RigctlError
from rigctl.record.rows import COUNTED, Row, Timing, merge_timings

SCHEMA_VERSION = 1
RAW_KEEP_S = 24 * 3600
DOWNSAMPLED_S = 300
RETENTION_DAYS = 30

COLUMNS = ("ts", "seconds", "resolution", "profile", "boot", "pool_tokens", "kv_usage_max", "kv_usage_seconds",
           "running_max", "waiting_max", *COUNTED, "finished", "timings", "energy_j")


class RecorderBusy(RigctlError):
    """Another recorder writes the record."""


def record_path() -> Path:
    return paths.state_dir() / "record.sqlite"


def _connect(path: Path) -> sqlite3.Connection:
    # one connection, used by whichever thread records (the TUI's, or the main thread headless);
    # RecordWriter serialises its use
    db = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a crash keeps every committed row but the last
    db.execute("""CREATE TABLE IF NOT EXISTS samples (
        ts REAL NOT NULL, seconds REAL NOT NULL, resolution INTEGER NOT NULL, profile TEXT NOT NULL,
        boot TEXT NOT NULL, pool_tokens INTEGER, kv_usage_max REAL, kv_usage_seconds REAL, running_max REAL,
        waiting_max REAL, preemptions REAL, prefix_queries REAL, prefix_hits REAL, prompt_tokens REAL,
        generation_tokens REAL, finished TEXT, timings TEXT, energy_j REAL)""")
    db.execute("CREATE INDEX IF NOT EXISTS samples_profile_ts ON samples (profile, ts)")
    db.execute("CREATE INDEX IF NOT EXISTS samples_ts ON samples (ts)")
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
    return db


def _values(row: Row) -> tuple[Any, ...]:
    return (row.ts, row.seconds, row.resolution, row.profile, row.boot, row.pool_tokens, row.kv_usage_max,
            row.kv_usage_seconds, row.running_max, row.waiting_max, *(row.counts.get(k, 0.0) for k in COUNTED),
            json.dumps(row.finished, separators=(",", ":")) if row.finished else None,
            json.dumps({k: t.to_json() for k, t in row.timings.items()}, separators=(",", ":")) if row.timings
            else None, row.energy_j)


def _row(values: tuple[Any, ...]) -> Row:
    (ts, seconds, resolution, profile, boot, pool, kv_max, kv_seconds, running, waiting, *counted, finished, timings,
     energy) = values
    parsed = {k: Timing.from_json(v) for k, v in json.loads(timings).items()} if timings else {}
    return Row(ts, seconds, profile, boot, pool, kv_max, kv_seconds or 0.0, running, waiting,
               {k: v or 0.0 for k, v in zip(COUNTED, counted, strict=True)}, json.loads(finished) if finished else {},
               parsed, energy, resolution)


class RecordReader:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or record_path()

    def exists(self) -> bool:
        return self.path.is_file()

    def rows(self, since: float | None = None, until: float | None = None,
             profiles: list[str] | None = None, boots: list[str] | None = None) -> list[Row]:
        where: list[str] = ["1=1"]
        args: list[Any] = []
        for column, value in (("ts >", since), ("ts <=", until)):
            if value is not None:
                where.append(f"{column} ?")
                args.append(value)
        for column, values in (("profile", profiles), ("boot", boots)):
            if values:
                where.append(f"{column} IN ({','.join('?' * len(values))})")
                args += values
        query = f"SELECT {', '.join(COLUMNS)} FROM samples WHERE {' AND '.join(where)} ORDER BY ts"
        collecting = gc.isenabled()
        gc.disable()  # building a month of rows set off the cycle collector hundreds of times: 3x the time
        try:
            return [_row(tuple(v)) for v in self._query(query, args)]
        finally:
            if collecting:
                gc.enable()

    def switch_rows(self, boot: str, look_back_s: float = 7 * 86400) -> list[Row]:
        """The rows of `boot` and of the boot that served before it: all a hit-rate regression is
        judged on (`rigctl status` and the TUI ask often; a month of rows is seconds of parsing)."""
        since = time.time() - look_back_s
        order = [b for (b,) in self._query("SELECT boot FROM samples WHERE ts > ? GROUP BY boot ORDER BY MIN(ts)",
                                           [since])]
        if boot not in order:
            return []
        at = order.index(boot)
        return self.rows(since, boots=order[max(0, at - 1):at + 1])

    def _query(self, query: str, args: list[Any]) -> list[tuple[Any, ...]]:
        if not self.exists():
            return []
        try:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=10)
        except sqlite3.Error as exc:
            raise RigctlError(f"{self.path}: cannot open the record ({exc})") from exc
        try:
            return db.execute(query, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise RigctlError(f"{self.path}: the record cannot be read ({exc})") from exc
        finally:
            db.close()


class RecordWriter:
    """The one writer: holds record.lock (flock) while open."""

    def __init__(self, path: Path | None = None, retention_days: float = RETENTION_DAYS) -> None:
        self.path = path or record_path()
        self.retention_days = retention_days
        paths.ensure_private_dir(self.path.parent)
        self._lock = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self._lock, 64, 0).decode(errors="replace").strip() or "?"
            os.close(self._lock)
            raise RecorderBusy(f"another recorder (pid {holder}) is writing {self.path}; one at a time") from None
        os.ftruncate(self._lock, 0)
        os.pwrite(self._lock, f"{os.getpid()}\n".encode(), 0)
        try:
            self.db = _connect(self.path)
        except sqlite3.Error as exc:
            os.close(self._lock)
            raise RigctlError(f"{self.path}: cannot open the record ({exc}); "
                              "move it away and a new one starts") from exc
        self._use = threading.Lock()

    def add(self, row: Row) -> None:
        with self._use:
            try:
                self._insert(row)
            except sqlite3.Error as exc:
                raise RigctlError(f"{self.path}: a row could not be written ({exc})") from exc

    def _insert(self, row: Row) -> None:
        self.db.execute(f"INSERT INTO samples VALUES ({','.join('?' * len(COLUMNS))})", _values(row))

    def compact(self, now: float | None = None) -> tuple[int, int]:
        """Downsample raw rows older than a day into 5-minute rows, drop rows past the retention;
        (rows downsampled, rows dropped). One transaction: a kill mid-way changes nothing."""
        now = time.time() if now is None else now
        cutoff, oldest = now - RAW_KEEP_S, now - self.retention_days * 86400
        with self._use, self._transaction():
            dropped = self.db.execute("DELETE FROM samples WHERE ts <= ?", (oldest,)).rowcount
            old = [_row(tuple(v)) for v in self.db.execute(
                f"SELECT {', '.join(COLUMNS)} FROM samples WHERE resolution < ? AND ts <= ? ORDER BY ts",
                (DOWNSAMPLED_S, cutoff))]
            groups: dict[tuple[str, str, int], list[Row]] = defaultdict(list)
            for row in old:
                groups[(row.profile, row.boot, int(row.ts // DOWNSAMPLED_S))].append(row)
            self.db.execute("DELETE FROM samples WHERE resolution < ? AND ts <= ?", (DOWNSAMPLED_S, cutoff))
            for rows in groups.values():
                self._insert(downsample(rows))
        return len(old), dropped

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise RigctlError(f"{self.path}: the record could not be compacted ({exc})") from exc
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        with self._use:
            self.db.close()
        os.close(self._lock)


def downsample(rows: list[Row]) -> Row:
    """Several intervals of one profile and boot as one row: increases and energy summed, peaks kept."""
    last = rows[-1]

    def peak(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return max(known) if known else None

    finished: dict[str, float] = defaultdict(float)
    for row in rows:
        for reason, n in row.finished.items():
            finished[reason] += n
    timings = {}
    for name in {n for row in rows for n in row.timings}:
        merged = merge_timings(row.timings[name] for row in rows if name in row.timings)
        if merged is not None:
            timings[name] = merged
    energy = [r.energy_j for r in rows if r.energy_j is not None]
    return Row(last.ts, sum(r.seconds for r in rows), last.profile, last.boot,
               int(peak([r.pool_tokens for r in rows]) or 0) or None, peak([r.kv_usage_max for r in rows]),
               sum(r.kv_usage_seconds for r in rows), peak([r.running_max for r in rows]),
               peak([r.waiting_max for r in rows]), {k: sum(r.counts.get(k, 0.0) for r in rows) for k in COUNTED},
               dict(finished), timings, sum(energy) if energy else None, DOWNSAMPLED_S)
