"""The record's SQLite file in the state dir: one writer at a time, WAL (a SIGKILL mid-write
loses at most the row being written), bounded by downsampling and retention.

    raw rows (one per interval, 10 s by default) for a day, then one row per 5 minutes per
    profile and boot, dropped after the retention (30 days by default)
"""

from __future__ import annotations

import errno
import fcntl
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
from rigctl.alerts.model import AlertChange
from rigctl.errors import RigctlError, UnsafePath
from rigctl.files import open_own
from rigctl.record import events
from rigctl.record.rows import COUNTED, COUNTED_FIRST, COUNTED_OFFLOAD, DOWNSAMPLED_S, Row, Timing, downsample

SCHEMA_VERSION = 2  # 2: the offload's counters (COUNTED_OFFLOAD), added at the table's end
BUSY_WAIT_S = 2.0
RAW_KEEP_S = 24 * 3600
RETENTION_DAYS = 30

COLUMNS = (
    "ts",
    "seconds",
    "resolution",
    "profile",
    "boot",
    "pool_tokens",
    "kv_usage_max",
    "kv_usage_seconds",
    "running_max",
    "waiting_max",
    *COUNTED_FIRST,
    "finished",
    "timings",
    "energy_j",
    *COUNTED_OFFLOAD,
)
COLUMNS_FIRST = COLUMNS[: -len(COUNTED_OFFLOAD)]  # schema 1's samples table


class RecorderBusy(RigctlError):
    """Another recorder writes the record."""


class RecordTrouble(RigctlError):
    """The record cannot be written now. `passing`: it may pass by itself (a full disk, a lock
    another program holds), so a long-running recorder waits and tries again; otherwise (a
    damaged file, a newer schema, a read-only dir) it will not, and the recorder stops."""

    def __init__(self, message: str, passing: bool) -> None:
        super().__init__(message)
        self.passing = passing


# SQLite's words for what passes by itself: another connection's lock, a full or failing disk
_PASSING = ("database is locked", "database table is locked", "database or disk is full", "disk i/o error")


def trouble(path: Path, doing: str, exc: BaseException) -> RecordTrouble:
    """An sqlite3 or OS error in one line, with what to do, and whether it may pass."""
    if isinstance(exc, RecordTrouble):
        return exc
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    lowered = text.lower()
    if isinstance(exc, UnsafePath):
        return RecordTrouble(str(exc), passing=False)
    if isinstance(exc, OSError):
        passing = exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EAGAIN, errno.EIO)
        return RecordTrouble(f"{path}: {doing}: {text}", passing)
    if "locked" in lowered:
        return RecordTrouble(
            f"{path}: {doing}: another program holds a lock on it (an open sqlite3 shell, a backup?)", passing=True
        )
    if any(word in lowered for word in _PASSING):
        return RecordTrouble(f"{path}: {doing}: {text}", passing=True)
    if "readonly" in lowered or "read-only" in lowered:
        return RecordTrouble(f"{path}: {doing}: the state dir is read-only", passing=False)
    if "not a database" in lowered or "malformed" in lowered:
        return RecordTrouble(f"{path}: {doing}: {text}; the file is damaged (move it away and a new record starts)", passing=False)
    return RecordTrouble(f"{path}: {doing}: {text}", passing=False)


def record_path() -> Path:
    return paths.state_dir() / "record.sqlite"


def refuse_links(path: Path) -> None:
    """SQLite follows a link where its file, its WAL or its shared memory should be: refuse one
    (rigctl may run as root; the link's target would be written)."""
    for one in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if one.is_symlink():
            raise UnsafePath(one, "a symbolic link where rigctl keeps its record; rigctl never writes through one (remove it)")
        if one.exists() and not one.is_file():
            raise UnsafePath(one, "not a regular file where rigctl keeps its record (remove it)")


def check_schema(db: sqlite3.Connection, path: Path) -> tuple[str, ...] | None:
    """The samples table's columns when the record is one this rigctl reads: its own layout, or
    schema 1's, which lacks only the offload's columns (a writer adds them, a reader sees them as
    NULL: reading_view); None when it has no table yet (an empty file is an empty record);
    RecordTrouble for another schema."""
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "samples" not in tables:
        return None
    if "meta" in tables:
        found = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        version = int(found[0]) if found and str(found[0]).isdigit() else None
        if version is not None and version > SCHEMA_VERSION:
            raise RecordTrouble(
                f"{path}: written by a newer rigctl (record schema {version}; this one reads "
                f"{SCHEMA_VERSION}): upgrade rigctl, or move the file away and a new record starts",
                passing=False,
            )
    columns = tuple(row[1] for row in db.execute("PRAGMA main.table_info(samples)"))
    if columns not in (COLUMNS, COLUMNS_FIRST):
        missing = [c for c in COLUMNS_FIRST if c not in columns]
        raise RecordTrouble(
            f"{path}: not the record this rigctl writes (its samples table "
            + (f"lacks {', '.join(missing[:3])}" if missing else f"has {len(columns)} columns, not {len(COLUMNS)}")
            + "): move it away and a new record starts",
            passing=False,
        )
    return columns


def reading_view(db: sqlite3.Connection, columns: tuple[str, ...]) -> None:
    """Let a read-only connection read a schema 1 record as this one: a temporary view named
    `samples`, which SQLite finds before the file's own table, adds the offload's columns as NULL
    (every query, the SQL-summed ones included, then reads both alike)."""
    if columns == COLUMNS:
        return
    added = ", ".join(f"NULL AS {name}" for name in COUNTED_OFFLOAD)
    db.execute(f"CREATE TEMP VIEW samples AS SELECT *, {added} FROM main.samples")


def _upgrade(db: sqlite3.Connection) -> None:
    """Schema 1 -> 2: the offload's columns added at the table's end, in one transaction."""
    db.execute("BEGIN IMMEDIATE")
    try:
        for name in COUNTED_OFFLOAD:
            db.execute(f"ALTER TABLE samples ADD COLUMN {name} REAL")
        db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _connect(path: Path) -> sqlite3.Connection:
    # one connection, used by whichever thread records (the TUI's, or the main thread headless);
    # RecordWriter serialises its use
    refuse_links(path)
    # a short busy wait: a lock another program holds is waited out a row at a time (the recorder
    # keeps sampling meanwhile), not by blocking the recorder's loop for long
    db = sqlite3.connect(path, timeout=BUSY_WAIT_S, isolation_level=None, check_same_thread=False)
    try:
        columns = check_schema(db, path)
    except BaseException:
        db.close()
        raise
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a crash keeps every committed row but the last
    db.execute("""CREATE TABLE IF NOT EXISTS samples (
        ts REAL NOT NULL, seconds REAL NOT NULL, resolution INTEGER NOT NULL, profile TEXT NOT NULL,
        boot TEXT NOT NULL, pool_tokens INTEGER, kv_usage_max REAL, kv_usage_seconds REAL, running_max REAL,
        waiting_max REAL, preemptions REAL, prefix_queries REAL, prefix_hits REAL, prompt_tokens REAL,
        generation_tokens REAL, finished TEXT, timings TEXT, energy_j REAL, external_prefix_queries REAL,
        external_prefix_hits REAL, offload_store_bytes REAL, offload_load_bytes REAL)""")
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
    if columns == COLUMNS_FIRST:
        _upgrade(db)
    db.execute("CREATE INDEX IF NOT EXISTS samples_profile_ts ON samples (profile, ts)")
    db.execute("CREATE INDEX IF NOT EXISTS samples_ts ON samples (ts)")
    events.create(db)  # a table an older rigctl's record lacks is added, never a new schema
    db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
    return db


def _values(row: Row) -> tuple[Any, ...]:
    return (
        row.ts,
        row.seconds,
        row.resolution,
        row.profile,
        row.boot,
        row.pool_tokens,
        row.kv_usage_max,
        row.kv_usage_seconds,
        row.running_max,
        row.waiting_max,
        *(row.counts.get(k, 0.0) for k in COUNTED_FIRST),
        json.dumps(row.finished, separators=(",", ":")) if row.finished else None,
        json.dumps({k: t.to_json() for k, t in row.timings.items()}, separators=(",", ":")) if row.timings else None,
        row.energy_j,
        *(row.counts.get(k, 0.0) for k in COUNTED_OFFLOAD),
    )


def row_of(values: tuple[Any, ...]) -> Row:
    (ts, seconds, resolution, profile, boot, pool, kv_max, kv_seconds, running, waiting, *rest) = values
    first, (finished, timings, energy), offload = (
        rest[: len(COUNTED_FIRST)],
        rest[len(COUNTED_FIRST) : len(COUNTED_FIRST) + 3],
        rest[len(COUNTED_FIRST) + 3 :],
    )
    parsed = {k: Timing.from_json(v) for k, v in json.loads(timings).items()} if timings else {}
    return Row(
        ts,
        seconds,
        profile,
        boot,
        pool,
        kv_max,
        kv_seconds or 0.0,
        running,
        waiting,
        {k: v or 0.0 for k, v in zip(COUNTED, (*first, *offload), strict=True)},
        json.loads(finished) if finished else {},
        parsed,
        energy,
        resolution,
    )


class RecordWriter:
    """The one writer: holds record.lock (flock) while open."""

    def __init__(self, path: Path | None = None, retention_days: float = RETENTION_DAYS) -> None:
        """RecorderBusy when another recorder writes; RecordTrouble (one line, and whether it may pass)
        when the record cannot be opened for writing."""
        self.path = path or record_path()
        self.retention_days = retention_days
        lock_path = self.path.with_suffix(".lock")
        try:
            paths.ensure_private_dir(self.path.parent)
            self._lock = open_own(lock_path, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise trouble(lock_path, "cannot open the recorder's lock", exc) from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self._lock, 64, 0).decode(errors="replace").strip() or "?"
            os.close(self._lock)
            raise RecorderBusy(f"another recorder (pid {holder}) is writing {self.path}; one at a time") from None
        try:
            os.ftruncate(self._lock, 0)
            os.pwrite(self._lock, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # who holds it is a courtesy for the one refused; the flock is what counts
        try:
            self.db = _connect(self.path)
        except (sqlite3.Error, OSError, RecordTrouble) as exc:
            os.close(self._lock)
            raise trouble(self.path, "cannot open the record", exc) from None
        self._use = threading.Lock()

    def add(self, row: Row) -> None:
        with self._use:
            try:
                self._insert(row)
            except sqlite3.Error as exc:
                raise trouble(self.path, "a row could not be written", exc) from None

    def add_event(self, change: AlertChange) -> None:
        with self._use:
            try:
                events.insert(self.db, change)
            except sqlite3.Error as exc:
                raise trouble(self.path, "an alert could not be written", exc) from None

    def _insert(self, row: Row) -> None:
        self.db.execute(f"INSERT INTO samples VALUES ({','.join('?' * len(COLUMNS))})", _values(row))

    def clock_problem(self, now: float) -> str | None:
        """Why the clock cannot be trusted to say what is old: it disagrees with the record's own
        newest row by more than the retention (an RTC before NTP, a clock set wrong)."""
        with self._use:
            try:
                (newest,) = self.db.execute("SELECT MAX(ts) FROM samples").fetchone()
            except sqlite3.Error as exc:
                raise trouble(self.path, "the record could not be read", exc) from None
        if newest is None or abs(now - newest) <= self.retention_days * 86400:
            return None
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(newest))
        ahead = "ahead of" if now > newest else "behind"
        return (
            f"the clock ({time.strftime('%Y-%m-%d %H:%M', time.localtime(now))}) is "
            f"{abs(now - newest) / 86400:.0f} days {ahead} the record's newest row ({stamp}): nothing is "
            f"downsampled or dropped until they agree"
        )

    def compact(self, now: float | None = None) -> tuple[int, int]:
        """Downsample raw rows older than a day into 5-minute rows, drop rows past the retention;
        (rows downsampled, rows dropped). One transaction: a kill mid-way changes nothing. Nothing
        at all while the clock disagrees with the record (clock_problem)."""
        now = time.time() if now is None else now
        if self.clock_problem(now):
            return 0, 0
        cutoff, oldest = now - RAW_KEEP_S, now - self.retention_days * 86400
        with self._use, self._transaction():
            dropped = self.db.execute("DELETE FROM samples WHERE ts <= ?", (oldest,)).rowcount
            events.drop_before(self.db, oldest)
            old = [
                row_of(tuple(v))
                for v in self.db.execute(
                    f"SELECT {', '.join(COLUMNS)} FROM samples WHERE resolution < ? AND ts <= ? ORDER BY ts",
                    (DOWNSAMPLED_S, cutoff),
                )
            ]
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
            raise trouble(self.path, "the record could not be compacted", exc) from None
        try:
            yield
        except sqlite3.Error as exc:
            self.db.execute("ROLLBACK")
            raise trouble(self.path, "the record could not be compacted", exc) from None
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        try:
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            self.db.execute("ROLLBACK")
            raise trouble(self.path, "the record could not be compacted", exc) from None

    def close(self) -> None:
        with self._use:
            self.db.close()
        os.close(self._lock)
