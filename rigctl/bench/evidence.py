"""How much an arm's figure can be trusted: a bootstrap interval over what it rests on.

A per-request figure (TTFT, TPOT, e2e, decode speed per stream) is resampled over the arm's
requests; a throughput over windows of the measured run (tokens per window, from each token
chunk's time), since every request of a fixed-length workload gives the same token count and
resampling requests would say nothing about how steady the rate was. Seeded: a kept run
summarises again to the same interval.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from rigctl.bench.loadgen import RequestResult

RESAMPLES = 400
WINDOWS = 10
LEVEL = 0.95
PER_REQUEST = (
    "ttft_p50_s",
    "ttft_p95_s",
    "ttft_mean_s",
    "tpot_p50_s",
    "tpot_p95_s",
    "tpot_mean_s",
    "e2e_p50_s",
    "e2e_p95_s",
    "decode_tok_per_s_stream",
    "decode_tok_per_s_worst",
    "itl_p50_s",
    "itl_p95_s",
)
WINDOWED = {"output_tok_per_s": "output", "total_tok_per_s": "total", "request_per_s": "requests"}


def _quantiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    low = ordered[int((1 - LEVEL) / 2 * (len(ordered) - 1))]
    high = ordered[int((1 + LEVEL) / 2 * (len(ordered) - 1))]
    return low, high


def _window_rates(results: Sequence[RequestResult], elapsed: float, what: str) -> list[float]:
    """Tokens (or requests) a second in each of WINDOWS equal windows of the run's steady part: up
    to the last request sent. After it the run drains (fewer and fewer requests in flight), which
    is the workload's end, not the build's speed; a run whose requests all went out at once
    (a burst under no cap) keeps its whole length."""
    if elapsed <= 0:
        return []
    last_sent = max((r.start_time for r in results), default=0.0)
    end = last_sent if last_sent > 0.2 * elapsed else elapsed
    width = end / WINDOWS
    amounts = [0.0] * WINDOWS

    def add(at: float, amount: float) -> None:
        if at <= end:
            amounts[min(WINDOWS - 1, max(0, int(at / width)))] += amount

    for result in results:
        if not result.success or result.ttft is None:
            continue
        if what == "requests":
            add(result.start_time + (result.latency or result.ttft), 1.0)
            continue
        chunks = [result.ttft]
        for gap in result.itl:
            chunks.append(chunks[-1] + gap)
        tokens = (result.output_tokens or len(chunks)) / len(chunks)
        for at in chunks:
            add(result.start_time + at, tokens)
        if what == "total":
            add(result.start_time + result.ttft, float(result.prompt_len or 0))
    return [a / width for a in amounts]


def intervals(
    results: Sequence[RequestResult],
    elapsed: float,
    figures: Callable[[Sequence[RequestResult], float], dict[str, float | None]],
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """The 95% bootstrap interval of every figure an arm's requests give (`figures`: the function
    that computes them from requests, summary.request_figures)."""
    ok = [r for r in results if r.success]
    if len(ok) < 2:
        return {}
    rng = random.Random(seed)
    draws: dict[str, list[float]] = {name: [] for name in PER_REQUEST}
    for _ in range(RESAMPLES):
        sample = [ok[rng.randrange(len(ok))] for _ in ok]
        found = figures(sample, elapsed)
        for name in PER_REQUEST:
            value = found.get(name)
            if value is not None:
                draws[name].append(value)
    out = {name: _quantiles(values) for name, values in draws.items() if len(values) >= RESAMPLES // 2}
    for name, what in WINDOWED.items():
        rates = _window_rates(ok, elapsed, what)
        if not rates:
            continue
        means = []
        for _ in range(RESAMPLES):
            picked = [rates[rng.randrange(len(rates))] for _ in rates]
            means.append(sum(picked) / len(picked))
        out[name] = _quantiles(means)
    return out


def relative_width(interval: tuple[float, float] | None, value: float | None) -> float | None:
    """The interval's width as a share of the figure (None when either is unknown or 0)."""
    if interval is None or not value:
        return None
    return (interval[1] - interval[0]) / abs(value)
