"""Reading the record: rows, the switch's two boots, the alerts and the trends, each query on a
read-only connection of its own (a reader never waits on the writer, WAL lets both run)."""

from __future__ import annotations

import gc
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rigctl.record import events, trends
from rigctl.record.coarse import bucketed_rows
from rigctl.record.events import RecordedEvent
from rigctl.record.rows import Row
from rigctl.record.store import COLUMNS, check_schema, reading_view, record_path, refuse_links, row_of, trouble
from rigctl.record.trends import Trends

T = TypeVar("T")
ROWS_AT_MOST = 20_000  # a window of more rows is summed by SQLite into buckets (record/coarse.py)


class RecordReader:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or record_path()

    def exists(self) -> bool:
        return self.path.is_file()

    def rows(
        self,
        since: float | None = None,
        until: float | None = None,
        profiles: list[str] | None = None,
        boots: list[str] | None = None,
    ) -> list[Row]:
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
            return [row_of(tuple(v)) for v in self._query(query, args)]
        finally:
            if collecting:
                gc.enable()

    def switch_rows(self, boot: str, look_back_s: float = 7 * 86400) -> list[Row]:
        """The rows of `boot` and of the boot that served before it: all a hit-rate regression is
        judged on (`rigctl status` and the TUI ask often; a month of rows is seconds of parsing)."""
        since = time.time() - look_back_s
        order = [b for (b,) in self._query("SELECT boot FROM samples WHERE ts > ? GROUP BY boot ORDER BY MIN(ts)", [since])]
        if boot not in order:
            return []
        at = order.index(boot)
        return self.rows(since, boots=order[max(0, at - 1) : at + 1])

    def trends(self, since: float, until: float, buckets: int = 120) -> Trends:
        """The window cut into `buckets`, each figure summed by SQLite (rigctl/record/trends.py)."""
        bucket_s = (until - since) / buckets
        return trends.build(
            since,
            until,
            bucket_s,
            self._query(*trends.bucket_query(since, until, bucket_s)),
            self._query(*trends.boots_query(since, until)),
            self._query(*trends.ttft_query(since, until, bucket_s)),
        )

    def events(self, since: float | None = None, until: float | None = None) -> list[RecordedEvent]:
        """The alerts recorded in (since, until], oldest first (none from a record written before
        rigctl kept them)."""
        if not self._query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'events'", []):
            return []
        return [events.build(tuple(v)) for v in self._query(*events.select(since, until))]

    def rows_at_most(
        self, since: float | None = None, until: float | None = None, profiles: list[str] | None = None, most: int = ROWS_AT_MOST
    ) -> list[Row]:
        """As rows(), but a window of more than `most` rows comes summed into at most about `most`
        buckets by SQLite (rigctl/record/coarse.py): `rigctl report` over a year of rows in
        seconds and in memory independent of the row count."""
        where: list[str] = ["1=1"]
        args: dict[str, Any] = {}
        if since is not None:
            where.append("ts > :since")
            args["since"] = since
        if until is not None:
            where.append("ts <= :until")
            args["until"] = until
        if profiles:
            names = {f"p{i}": name for i, name in enumerate(profiles)}
            where.append(f"profile IN ({', '.join(':' + k for k in names)})")
            args.update(names)
        clause = " AND ".join(where)
        found = self._run(lambda db: db.execute(f"SELECT COUNT(*), MIN(ts), MAX(ts) FROM samples WHERE {clause}", args).fetchone())
        if not found or found[0] <= most:
            return self.rows(since, until, profiles)
        _, first, last = found
        # half as many buckets as rows allowed: metered and unmetered rows of a bucket stay apart
        bucket_s = max(10.0, 2 * (last - first) / most)
        return self._run(lambda db: bucketed_rows(db, clause, args, bucket_s)) or []

    def _query(self, query: str, args: list[Any]) -> list[tuple[Any, ...]]:
        """Rows of `query`; none from a record that does not exist or has no table yet (an empty
        file); RecordTrouble, in one line, for one that cannot be read."""
        return self._run(lambda db: db.execute(query, args).fetchall()) or []

    def _run(self, read: Callable[[sqlite3.Connection], T]) -> T | None:
        """`read` on a read-only connection; None from a record that does not exist or has no
        table yet (an empty file); RecordTrouble, in one line, for one that cannot be read."""
        if not self.exists():
            return None
        try:
            refuse_links(self.path)
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=10)
        except (sqlite3.Error, OSError) as exc:
            raise trouble(self.path, "cannot open the record", exc) from None
        try:
            columns = check_schema(db, self.path)
            if columns is None:
                return None
            reading_view(db, columns)
            return read(db)
        except sqlite3.Error as exc:
            raise trouble(self.path, "the record cannot be read", exc) from None
        finally:
            db.close()
