"""The serving record over time, for the trends screen: a window cut into buckets, each figure
aggregated by SQLite itself (a month of rows is ~30,000: summed in the query, never built into
Row objects), and the switches and bench runs that happened in it.

    KV usage (peak) and peak resident context, prefix-cache hit rate, TTFT p50 and p95 (from
    the histogram buckets each row kept, summed per bucket by SQLite), output tok/s, power and
    J/token: a value a bucket, None where nothing was recorded (never drawn as 0)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rigctl.record.rows import Timing, bench_plan_of, quantile

Figure = Literal["kv", "hit_rate", "ttft_p50", "ttft_p95", "tok_s", "power", "j_per_token"]
FIGURES: tuple[Figure, ...] = ("kv", "hit_rate", "ttft_p50", "ttft_p95", "tok_s", "power", "j_per_token")
WINDOWS = {"1h": 3600.0, "24h": 86400.0, "7d": 7 * 86400.0, "30d": 30 * 86400.0}


@dataclass(frozen=True)
class Mark:
    ts: float
    profile: str
    bench: str | None  # the plan, for a bench's boot


@dataclass(frozen=True)
class Trends:
    since: float
    until: float
    bucket_s: float
    series: dict[Figure, list[float | None]]
    peak_resident: int | None  # the window's highest KV usage times its pool, in tokens
    marks: tuple[Mark, ...]

    @property
    def empty(self) -> bool:
        return all(v is None for values in self.series.values() for v in values)


def bucket_query(since: float, until: float, bucket_s: float) -> tuple[str, list[Any]]:
    """One row a bucket that has rows: its number and the sums each figure is made of."""
    return (
        """SELECT CAST((ts - ?) / ? AS INTEGER) AS b, SUM(seconds), MAX(kv_usage_max), MAX(kv_usage_max * pool_tokens),
           SUM(prefix_hits), SUM(prefix_queries), SUM(generation_tokens), SUM(energy_j),
           SUM(CASE WHEN energy_j IS NOT NULL THEN seconds END)
           FROM samples WHERE ts > ? AND ts <= ? AND boot NOT LIKE 'bench:%'
           GROUP BY b ORDER BY b""",
        [since, bucket_s, since, until],
    )


def ttft_query(since: float, until: float, bucket_s: float) -> tuple[str, list[Any]]:
    """The TTFT histogram of each bucket: its rows' observations summed per (lower, upper) bound
    by SQLite, from the buckets each row stored (rows.Timing), so a month is a few thousand rows
    of sums, not its rows' JSON parsed here."""
    return (
        """SELECT CAST((ts - ?) / ? AS INTEGER) AS b, json_extract(h.value, '$[0]') AS lo,
           json_extract(h.value, '$[1]') AS hi, SUM(json_extract(h.value, '$[2]'))
           FROM samples, json_each(samples.timings, '$.ttft[2]') AS h
           WHERE ts > ? AND ts <= ? AND boot NOT LIKE 'bench:%' AND json_valid(samples.timings)
           GROUP BY b, lo, hi""",
        [since, bucket_s, since, until],
    )


def boots_query(since: float, until: float) -> tuple[str, list[Any]]:
    """Each boot that began in the window (bench arms included: they are marked as such)."""
    return (
        """SELECT boot, profile, MIN(ts - seconds) AS began FROM samples GROUP BY boot
           HAVING began > ? AND began <= ? ORDER BY began""",
        [since, until],
    )


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return top / bottom if top is not None and bottom else None


def build(
    since: float,
    until: float,
    bucket_s: float,
    buckets: list[tuple[Any, ...]],
    boots: list[tuple[Any, ...]],
    ttft: list[tuple[Any, ...]],
) -> Trends:
    count = max(1, round((until - since) / bucket_s))
    series: dict[Figure, list[float | None]] = {figure: [None] * count for figure in FIGURES}
    peak: float | None = None
    for b, seconds, kv_max, resident, hits, queries, generated, energy, powered in buckets:
        if not 0 <= b < count:
            continue
        series["kv"][b] = kv_max
        series["hit_rate"][b] = _ratio(hits, queries)
        series["tok_s"][b] = _ratio(generated, seconds)
        series["power"][b] = _ratio(energy, powered)
        series["j_per_token"][b] = _ratio(energy, generated) if generated else None
        if resident is not None:
            peak = max(peak or 0.0, resident)
    histograms: dict[int, list[tuple[Any, Any, float]]] = {}
    for b, lo, hi, observed in ttft:
        if 0 <= b < count and observed:
            histograms.setdefault(b, []).append((lo, hi, observed))
    for b, histogram in histograms.items():
        timing = Timing(0.0, sum(n for _, _, n in histogram), histogram)
        p50, p95 = quantile(timing, 0.5), quantile(timing, 0.95)
        series["ttft_p50"][b], series["ttft_p95"][b] = (p50.value if p50 else None), (p95.value if p95 else None)
    marks = tuple(Mark(began, profile, bench_plan_of(boot)) for boot, profile, began in boots)
    return Trends(since, until, bucket_s, series, round(peak) if peak is not None else None, marks)
