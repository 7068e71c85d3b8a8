"""A record written before the offload's counters (schema 1) is read as it is, and the first
writer that opens it adds their columns in place: every old row kept, none read as offloading."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from rigctl.record.reader import RecordReader
from rigctl.record.rows import Row
from rigctl.record.store import COLUMNS, RecordWriter

SCHEMA_1 = """CREATE TABLE samples (
    ts REAL NOT NULL, seconds REAL NOT NULL, resolution INTEGER NOT NULL, profile TEXT NOT NULL,
    boot TEXT NOT NULL, pool_tokens INTEGER, kv_usage_max REAL, kv_usage_seconds REAL, running_max REAL,
    waiting_max REAL, preemptions REAL, prefix_queries REAL, prefix_hits REAL, prompt_tokens REAL,
    generation_tokens REAL, finished TEXT, timings TEXT, energy_j REAL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
INSERT INTO meta VALUES ('schema', '1');"""


def schema_1_record(path: Path, rows: int, start: float) -> None:
    db = sqlite3.connect(path)
    db.executescript(SCHEMA_1)
    for i in range(rows):
        db.execute(
            "INSERT INTO samples VALUES (?, 10, 10, 'old', 'b1', 1000, 0.5, 5, 2, 0, 0, 400, 100, 400, 50, "
            "'{\"stop\":2}', NULL, 30.0)",
            (start + 10 * i,),
        )
    db.commit()
    db.close()


def test_a_schema_1_record_is_read_then_upgraded_by_its_first_writer(tmp_path: Path) -> None:
    path = tmp_path / "record.sqlite"
    now = time.time()
    schema_1_record(path, 3, now - 100)
    reader = RecordReader(path)
    old = reader.rows()
    assert [r.counts["prefix_hits"] for r in old] == [100.0] * 3
    assert all(r.counts["offload_store_bytes"] == 0 and r.counts["external_prefix_hits"] == 0 for r in old)
    assert len(reader.rows_at_most(most=1)) >= 1  # SQL-summed buckets read the missing columns too
    writer = RecordWriter(path)
    try:
        counts = {"prefix_queries": 10.0, "external_prefix_queries": 8.0, "external_prefix_hits": 6.0}
        writer.add(Row(now, 10, "new", "b2", counts={**counts, "offload_store_bytes": 2.0**30, "offload_load_bytes": 2.0**29}))
    finally:
        writer.close()
    db = sqlite3.connect(path)
    assert tuple(c[1] for c in db.execute("PRAGMA table_info(samples)")) == COLUMNS
    assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("2",)
    db.close()
    rows = reader.rows()
    assert [r.profile for r in rows] == ["old", "old", "old", "new"]
    assert rows[0].counts["prefix_hits"] == 100.0 and rows[0].energy_j == 30.0 and rows[0].finished == {"stop": 2}
    assert rows[-1].counts["offload_load_bytes"] == 2.0**29 and rows[-1].counts["external_prefix_hits"] == 6.0
