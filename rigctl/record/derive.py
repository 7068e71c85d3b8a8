"""The table owners publish, from recorded rows: per profile (or per boot) what it did while it
served, and the hit-rate regressions a switch caused.

Prefix queries and hits are counted in tokens, as vLLM counts them. A boot's first minutes run
on a cold cache, so besides the hit rate over everything, `prefix_hit_rate_warm` leaves out each
boot's first WARMUP_S of traffic: the rate comparable between profiles that booted at different
times. Figures resting on too little traffic are listed in `low_traffic`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rigctl.record.rows import Row, merge_timings, quantile

WARMUP_S = 300.0
MIN_REQUESTS = 20  # below this a latency mean or p95 says little
MIN_PREFIX_QUERIES = 20_000  # tokens: below this a hit rate says little
REGRESSION_POINTS = 0.10  # a fall of 10 points of hit rate
TIMINGS = {"ttft": "ttft", "prefill": "prefill", "tpot": "tpot", "e2e": "e2e"}


@dataclass(frozen=True)
class Thresholds:
    """What counts as enough traffic, and as a fall ([record] in config.toml)."""

    warmup_s: float = WARMUP_S
    min_prefix_queries: float = MIN_PREFIX_QUERIES
    regression_points: float = REGRESSION_POINTS


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


@dataclass(frozen=True)
class ServedFigures:
    profile: str
    boots: tuple[str, ...]
    first: float
    last: float
    hours_served: float
    requests: float
    pool_tokens: int | None
    peak_resident_tokens: int | None
    peak_resident_share: float | None
    preemptions: float
    prefix_queries: float
    prefix_hits: float
    prefix_hit_rate: float | None
    prefix_hit_rate_warm: float | None
    truncated: float  # finished by length
    aborted: float
    errors: float
    latency: dict[str, dict[str, float | None]]  # ttft/prefill/tpot/e2e -> mean_s, p95_s
    mean_power_w: float | None
    j_per_token: float | None
    generation_tokens: float
    cold_cache: bool  # no prefix query at all: nothing was cached or asked
    # vLLM 0.33's KV offload to host RAM, or a KV connector: tokens found outside the GPU pool, and
    # the bytes stored to and loaded back from host RAM (0 where the engine has neither)
    external_prefix_queries: float = 0.0
    external_prefix_hits: float = 0.0
    offload_store_bytes: float = 0.0
    offload_load_bytes: float = 0.0
    low_traffic: tuple[str, ...] = ()
    regression: Regression | None = None
    p95_bounds: dict[str, str] = field(default_factory=dict)  # "<" or ">": only a bound of that p95 is known

    @property
    def external_hit_rate(self) -> float | None:
        return _ratio(self.external_prefix_hits, self.external_prefix_queries)

    @property
    def offloaded(self) -> bool:
        """The engine offloaded KV or looked beyond its pool while these rows were recorded."""
        return bool(self.external_prefix_queries or self.offload_store_bytes or self.offload_load_bytes)

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("latency", "regression", "boots", "low_traffic", "p95_bounds")}
        out["boots"] = list(self.boots)
        for name, figures in self.latency.items():
            out[f"{name}_mean_s"] = figures["mean"]
            out[f"{name}_p95_s"] = figures["p95"]
            out[f"{name}_p95_bound"] = self.p95_bounds.get(name)
        out["external_hit_rate"] = self.external_hit_rate
        out["low_traffic"] = list(self.low_traffic)
        out["regression"] = self.regression.to_json() if self.regression else None
        return out


def figures(rows: Sequence[Row], name: str, limits: Thresholds = Thresholds()) -> ServedFigures:
    """The figures of these rows (one profile's, or one boot's), in time order."""
    boots: list[str] = []
    for row in rows:
        if row.boot not in boots:
            boots.append(row.boot)
    queries = sum(r.counts.get("prefix_queries", 0.0) for r in rows)
    hits = sum(r.counts.get("prefix_hits", 0.0) for r in rows)
    warm = list(_warm_rows(rows, limits.warmup_s))
    warm_q = sum(r.counts.get("prefix_queries", 0.0) for r in warm)
    warm_h = sum(r.counts.get("prefix_hits", 0.0) for r in warm)
    requests = sum(r.requests for r in rows)
    latency: dict[str, dict[str, float | None]] = {}
    bounds: dict[str, str] = {}
    for label, key in TIMINGS.items():
        timing = merge_timings(r.timings[key] for r in rows if key in r.timings)
        if timing is None and key == "tpot":  # before 0.11 only the per-token gap was kept
            timing = merge_timings(r.timings["itl"] for r in rows if "itl" in r.timings)
        p95 = quantile(timing, 0.95) if timing else None
        latency[label] = {"mean": _ratio(timing.sum, timing.count) if timing else None, "p95": p95.value if p95 else None}
        if p95 is not None and p95.relation != "~":  # in the first or the +Inf bucket: only a bound is known
            bounds[label] = p95.relation
    pools = [r.pool_tokens for r in rows if r.pool_tokens]
    pool = max(pools) if pools else None
    peaks = [r.kv_usage_max * r.pool_tokens for r in rows if r.kv_usage_max is not None and r.pool_tokens]
    peak = int(max(peaks)) if peaks else None
    metered = [r for r in rows if r.energy_j is not None]
    energy = sum(r.energy_j or 0.0 for r in metered)
    metered_s = sum(r.seconds for r in metered)
    generated = sum(r.counts.get("generation_tokens", 0.0) for r in rows)
    generated_metered = sum(r.counts.get("generation_tokens", 0.0) for r in metered)
    low = []
    if requests < MIN_REQUESTS:
        low += ["requests", *(f"{k}_mean_s" for k in TIMINGS), *(f"{k}_p95_s" for k in TIMINGS)]
    if queries < limits.min_prefix_queries:
        low.append("prefix_hit_rate")
    if warm_q < limits.min_prefix_queries:
        low.append("prefix_hit_rate_warm")
    return ServedFigures(
        profile=name,
        boots=tuple(boots),
        first=rows[0].ts - rows[0].seconds if rows else 0.0,
        last=rows[-1].ts if rows else 0.0,
        hours_served=sum(r.seconds for r in rows) / 3600,
        requests=requests,
        pool_tokens=pool,
        peak_resident_tokens=peak,
        peak_resident_share=(peak / pool) if peak is not None and pool else None,
        preemptions=sum(r.counts.get("preemptions", 0.0) for r in rows),
        prefix_queries=queries,
        prefix_hits=hits,
        prefix_hit_rate=_ratio(hits, queries),
        prefix_hit_rate_warm=_ratio(warm_h, warm_q),
        truncated=sum(r.finished.get("length", 0.0) for r in rows),
        aborted=sum(r.finished.get("abort", 0.0) for r in rows),
        errors=sum(r.finished.get("error", 0.0) for r in rows),
        latency=latency,
        p95_bounds=bounds,
        mean_power_w=_ratio(energy, metered_s) if metered else None,
        j_per_token=_ratio(energy, generated_metered) if metered else None,
        generation_tokens=generated,
        cold_cache=queries == 0 and hits == 0,
        external_prefix_queries=sum(r.counts.get("external_prefix_queries", 0.0) for r in rows),
        external_prefix_hits=sum(r.counts.get("external_prefix_hits", 0.0) for r in rows),
        offload_store_bytes=sum(r.counts.get("offload_store_bytes", 0.0) for r in rows),
        offload_load_bytes=sum(r.counts.get("offload_load_bytes", 0.0) for r in rows),
        low_traffic=tuple(low),
    )


def _warm_rows(rows: Iterable[Row], warmup_s: float) -> Iterable[Row]:
    """Each boot's rows after its first warmup_s of traffic (a boot starts with a cold cache)."""
    traffic_since: dict[str, float] = {}
    for row in rows:
        if row.counts.get("prefix_queries", 0.0) <= 0:
            continue
        start = traffic_since.setdefault(row.boot, row.ts - row.seconds)
        if row.ts - start > warmup_s:
            yield row


Explain = Callable[["Regression"], "Regression"]  # a regression with its cause, where one can be told


def by_profile(
    rows: Sequence[Row], profiles: Sequence[str] | None = None, limits: Thresholds = Thresholds(), explain: Explain | None = None
) -> list[ServedFigures]:
    """One column per profile, in the order asked (else the order they first served)."""
    order = list(profiles) if profiles else list(dict.fromkeys(r.profile for r in rows))
    out = [figures([r for r in rows if r.profile == name], name, limits) for name in order]
    flags = {reg.current_boot: explain(reg) if explain else reg for reg in regressions(rows, limits)}
    return [_flagged(f, flags) for f in out]


def by_boot(rows: Sequence[Row], limits: Thresholds = Thresholds(), explain: Explain | None = None) -> list[ServedFigures]:
    flags = {reg.current_boot: explain(reg) if explain else reg for reg in regressions(rows, limits)}
    out = []
    for boot in dict.fromkeys(r.boot for r in rows):
        mine = [r for r in rows if r.boot == boot]
        out.append(_flagged(figures(mine, mine[0].profile, limits), flags, boot))
    return out


def _flagged(served: ServedFigures, flags: dict[str, Regression], boot: str | None = None) -> ServedFigures:
    hit = next((flags[b] for b in ((boot,) if boot else served.boots) if b in flags), None)
    return served if hit is None else ServedFigures(**{**served.__dict__, "regression": hit})


@dataclass(frozen=True)
class Regression:
    previous: str  # profile
    current: str
    previous_rate: float
    current_rate: float
    switched_at: float
    current_boot: str
    current_queries: float
    previous_start: float = 0.0  # when the previous profile's last boot began serving (its rows')
    current_end: float = 0.0  # the current boot's last row
    cause: str = ""  # whose fault, where the front door's recording can tell (rigctl.record.prefix_fault)

    @property
    def points(self) -> float:
        return self.previous_rate - self.current_rate

    def describe(self) -> str:
        return (
            f"prefix hit rate fell from {self.previous_rate:.1%} ({self.previous}) to {self.current_rate:.1%} "
            f"({self.current}) since the switch: {self.points * 100:.1f} points over "
            f"{self.current_queries:,.0f} queried tokens" + (f"; {self.cause}" if self.cause else "")
        )

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "points": self.points}


@dataclass(frozen=True)
class _Stretch:
    profile: str
    boot: str
    start: float
    rows: list[Row] = field(default_factory=list)


def regressions(rows: Sequence[Row], limits: Thresholds = Thresholds()) -> list[Regression]:
    """After each switch to another profile, once the new one has answered enough prefix tokens
    (after its warm-up), its hit rate against the previous profile's over its last boot; a fall
    beyond the threshold is a regression. Without enough traffic nothing is said."""
    stretches: list[_Stretch] = []
    for row in rows:
        if not stretches or stretches[-1].boot != row.boot:
            stretches.append(_Stretch(row.profile, row.boot, row.ts - row.seconds))
        stretches[-1].rows.append(row)
    found = []
    for before, after in itertools.pairwise(stretches):
        if before.profile == after.profile:
            continue
        old, new = _rate(before.rows, limits), _rate(after.rows, limits)
        if old is None or new is None:
            continue
        if old[0] - new[0] > limits.regression_points:
            found.append(
                Regression(
                    before.profile,
                    after.profile,
                    old[0],
                    new[0],
                    after.start,
                    after.boot,
                    new[1],
                    previous_start=before.start,
                    current_end=after.rows[-1].ts,
                )
            )
    return found


def _rate(rows: Sequence[Row], limits: Thresholds) -> tuple[float, float] | None:
    warm = list(_warm_rows(rows, limits.warmup_s))  # a boot's cold start is not its hit rate
    queries = sum(r.counts.get("prefix_queries", 0.0) for r in warm)
    if queries < limits.min_prefix_queries:
        return None
    return sum(r.counts.get("prefix_hits", 0.0) for r in warm) / queries, queries


def current_regression(rows: Sequence[Row], boot: str, limits: Thresholds = Thresholds()) -> Regression | None:
    """The regression the switch to `boot` caused, if its traffic already shows one."""
    return next((r for r in regressions(rows, limits) if r.current_boot == boot), None)


def thresholds_of(settings: object) -> Thresholds:
    """From rigctl's settings ([record] warmup_s, min_prefix_queries, regression_points)."""
    return Thresholds(
        getattr(settings, "record_warmup", WARMUP_S),
        getattr(settings, "record_min_prefix_queries", MIN_PREFIX_QUERIES),
        getattr(settings, "record_regression_points", REGRESSION_POINTS),
    )
