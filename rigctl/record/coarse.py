"""A long window of the record as at most a given number of rows, summed by SQLite.

A year of 10 s rows is a million rows; built as Python objects they took `rigctl report` 32 s
and 2.9 GB on a 2-core VM. Here SQLite groups them into buckets of one boot and one profile (and
metered or not, so that energy is never averaged over seconds it did not meter) and sums every
count, keeps every peak, and merges the latency histograms bucket by bucket (json_each over the
stored JSON), so Python sees only the buckets: memory independent of the row count.

What is lost is only where inside a bucket something happened: a boot's warm-up (the hit rate
that leaves out each boot's first minutes) is judged to the bucket, which is the window over the
row limit (a year in 20,000 rows: 26 minutes). The counts, the histograms and the peaks are
exact. A window with fewer rows than the limit is read row by row, as before.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from typing import Any

from rigctl.record.rows import COUNTED, Row, Timing

Group = tuple[str, str, int, int]  # boot, profile, metered, bucket index

_KEY = "boot, profile, (energy_j IS NOT NULL), CAST(ts / :bucket AS INTEGER)"


def bucketed_rows(db: sqlite3.Connection, where: str, args: dict[str, Any], bucket_s: float) -> list[Row]:
    """The rows matching `where` (named parameters in `args`), one per bucket of `bucket_s`
    seconds of one boot and profile, in time order."""
    params = {**args, "bucket": bucket_s}
    sums = ", ".join(f"SUM({name})" for name in COUNTED)
    scalars = db.execute(
        f"""SELECT {_KEY}, MAX(ts), SUM(seconds), MAX(pool_tokens), MAX(kv_usage_max), MAX(kv_usage_max * pool_tokens),
                   SUM(kv_usage_seconds), MAX(running_max), MAX(waiting_max), {sums}, SUM(energy_j)
            FROM samples WHERE {where} GROUP BY {_KEY} ORDER BY MAX(ts)""",
        params,
    ).fetchall()
    finished: dict[Group, dict[str, float]] = defaultdict(dict)
    for *group, reason, n in db.execute(
        f"""SELECT {_KEY}, f.key, SUM(f.value) FROM samples, json_each(samples.finished) AS f
            WHERE {where} AND finished IS NOT NULL AND finished != '' GROUP BY {_KEY}, f.key""",
        params,
    ):
        finished[_group(group)][str(reason)] = float(n or 0.0)
    totals: dict[Group, dict[str, tuple[float, float]]] = defaultdict(dict)
    for *group, name, total, count in db.execute(
        f"""SELECT {_KEY}, t.key, SUM(json_extract(t.value, '$[0]')), SUM(json_extract(t.value, '$[1]'))
            FROM samples, json_each(samples.timings) AS t
            WHERE {where} AND timings IS NOT NULL AND timings != '' GROUP BY {_KEY}, t.key""",
        params,
    ):
        totals[_group(group)][str(name)] = (float(total or 0.0), float(count or 0.0))
    buckets: dict[Group, dict[str, list[tuple[float, Any, float]]]] = defaultdict(lambda: defaultdict(list))
    for *group, name, low, high, n in db.execute(
        f"""SELECT {_KEY}, t.key, json_extract(b.value, '$[0]') AS lo, json_extract(b.value, '$[1]') AS hi,
                   SUM(json_extract(b.value, '$[2]'))
            FROM samples, json_each(samples.timings) AS t, json_each(t.value, '$[2]') AS b
            WHERE {where} AND timings IS NOT NULL AND timings != '' GROUP BY {_KEY}, t.key, lo, hi ORDER BY lo""",
        params,
    ):
        buckets[_group(group)][str(name)].append((float(low), high, float(n or 0.0)))
    out = []
    for boot, profile, metered, index, ts, seconds, pool, kv_max, resident, kv_seconds, running, waiting, *rest in scalars:
        if resident is not None and pool:
            kv_max = resident / pool  # so that usage x pool is the bucket's true peak in tokens
        group = (str(boot), str(profile), int(metered), int(index))
        counted, energy = rest[: len(COUNTED)], rest[len(COUNTED)]
        timings = {
            name: Timing(total, count, tuple(buckets[group].get(name, ())))
            for name, (total, count) in totals.get(group, {}).items()
        }
        out.append(
            Row(
                float(ts),
                float(seconds),
                str(profile),
                str(boot),
                int(pool) if pool else None,
                kv_max,
                float(kv_seconds or 0.0),
                running,
                waiting,
                {k: float(v or 0.0) for k, v in zip(COUNTED, counted, strict=True)},
                finished.get(group, {}),
                timings,
                float(energy) if metered and energy is not None else None,
                max(10, round(bucket_s)),
            )
        )
    return out


def _group(values: list[Any]) -> Group:
    boot, profile, metered, index = values
    return str(boot), str(profile), int(metered), int(index)
