"""One arm's figures, from its raw data only: the requests, the /metrics scrapes around the
measured window, the samples taken during it, the boot record. Pure functions, so a kept
run can be summarised again (`rigctl bench report`) and a figure checked by hand.

Definitions follow `vllm bench serve`: percentiles interpolate linearly (numpy's default);
TPOT is per request, (e2e - TTFT) / (output tokens - 1), for requests with more than one
output token; ITL pools every chunk gap of every request; throughput is over the time from
the first send to the last answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rigctl.bench.evidence import intervals
from rigctl.bench.loadgen import RequestResult
from rigctl.engine.derive import interval
from rigctl.engine.metrics import EngineSnapshot


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100), interpolated linearly between the closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def request_figures(results: Sequence[RequestResult], elapsed: float) -> dict[str, float | None]:
    ok = [r for r in results if r.success]
    ttft = [r.ttft for r in ok if r.ttft is not None]
    tpot = [
        (r.latency - r.ttft) / (r.output_tokens - 1)
        for r in ok
        if r.latency is not None and r.ttft is not None and r.output_tokens and r.output_tokens > 1
    ]
    itl = [gap for r in ok for gap in r.itl]
    e2e = [r.latency for r in ok if r.latency is not None]
    output = sum(r.output_tokens or 0 for r in ok)
    prompt = sum(r.prompt_len or 0 for r in ok)
    streams = [1.0 / t for t in tpot if t > 0]

    def rate(amount: float) -> float | None:
        return amount / elapsed if elapsed > 0 else None

    return {
        "output_tok_per_s": rate(output),
        "total_tok_per_s": rate(output + prompt),
        "request_per_s": rate(len(ok)),
        "ttft_p50_s": percentile(ttft, 50),
        "ttft_p95_s": percentile(ttft, 95),
        "ttft_mean_s": _mean(ttft),
        "tpot_p50_s": percentile(tpot, 50),
        "tpot_p95_s": percentile(tpot, 95),
        "tpot_mean_s": _mean(tpot),
        "itl_p50_s": percentile(itl, 50),
        "itl_p95_s": percentile(itl, 95),
        "e2e_p50_s": percentile(e2e, 50),
        "e2e_p95_s": percentile(e2e, 95),
        "decode_tok_per_s_stream": percentile(streams, 50),
        "decode_tok_per_s_worst": min(streams) if streams else None,
    }


@dataclass(frozen=True)
class GpuReading:
    index: int
    temperature_c: float | None
    power_w: float | None
    energy_j: float | None


@dataclass(frozen=True)
class Sample:
    """One look at the engine and the GPUs while the arm ran."""

    t: float  # seconds after the measured window began
    kv_usage: float | None
    running: float | None
    waiting: float | None
    gpus: tuple[GpuReading, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "t": round(self.t, 3),
            "kv_usage": self.kv_usage,
            "running": self.running,
            "waiting": self.waiting,
            "gpus": [g.__dict__ for g in self.gpus],
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> Sample:
        return Sample(
            float(data["t"]),
            data.get("kv_usage"),
            data.get("running"),
            data.get("waiting"),
            tuple(GpuReading(**g) for g in data.get("gpus", ())),
        )


@dataclass(frozen=True)
class Heat:
    start_c: float | None  # hottest serving GPU at the first sample
    peak_c: float | None
    energy_j: float | None  # the serving GPUs, over the window
    power_w: float | None  # mean


def heat(samples: Sequence[Sample]) -> Heat:
    """Temperatures and energy of the GPUs in the samples (the serving ones: the caller keeps
    only those): energy from the driver's counter where both ends have it, else mean power
    times the window."""
    with_gpus = [s for s in samples if s.gpus]
    if not with_gpus:
        return Heat(None, None, None, None)
    first, last = with_gpus[0], with_gpus[-1]
    temps = [g.temperature_c for s in with_gpus for g in s.gpus if g.temperature_c is not None]
    start = [g.temperature_c for g in first.gpus if g.temperature_c is not None]
    powers = [
        sum(g.power_w for g in s.gpus if g.power_w is not None) for s in with_gpus if any(g.power_w is not None for g in s.gpus)
    ]
    seconds = last.t - first.t
    energy: float | None = None
    begin = {g.index: g.energy_j for g in first.gpus}
    spent = []
    for reading in last.gpus:
        before = begin.get(reading.index)
        if before is not None and reading.energy_j is not None and reading.energy_j >= before:
            spent.append(reading.energy_j - before)  # a counter that went down was reset: not used
    if seconds > 0 and spent and len(spent) == len(last.gpus):
        energy = sum(spent)
    elif seconds > 0 and powers:
        energy = sum(powers) / len(powers) * seconds
    mean_power = energy / seconds if energy is not None and seconds > 0 else _mean(powers)
    return Heat(max(start) if start else None, max(temps) if temps else None, energy, mean_power)


@dataclass
class ArmFigures:
    metrics: dict[str, float | None] = field(default_factory=dict)
    requests: int = 0
    completed: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)  # the first few, as the server said them
    duration_s: float = 0.0
    prompt_tokens: int = 0
    output_tokens: int = 0
    heat: Heat = field(default_factory=lambda: Heat(None, None, None, None))
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)  # 95% bootstrap, see evidence.py


def arm_figures(
    results: Sequence[RequestResult],
    elapsed: float,
    before: EngineSnapshot | None,
    after: EngineSnapshot | None,
    samples: Sequence[Sample],
    pool_tokens: int | None,
    max_model_len: int | None,
) -> ArmFigures:
    metrics = request_figures(results, elapsed)
    ok = [r for r in results if r.success]
    output = sum(r.output_tokens or 0 for r in ok)
    if before is not None and after is not None:
        engine = interval(before, after)
        metrics["prefix_hit_rate"] = engine.hit_rate
        metrics["preemptions"] = engine.preemptions
        metrics["spec_acceptance_rate"] = engine.acceptance_rate
        metrics["spec_acceptance_length"] = engine.mean_acceptance_length
    else:
        metrics.update(prefix_hit_rate=None, preemptions=None, spec_acceptance_rate=None, spec_acceptance_length=None)
    usage = [s.kv_usage for s in samples if s.kv_usage is not None]
    if after is not None and after.kv_usage is not None:
        usage.append(after.kv_usage)
    metrics["kv_usage_peak"] = max(usage) if usage else None
    metrics["kv_pool_tokens"] = float(pool_tokens) if pool_tokens is not None else None
    metrics["kv_pool_per_max_len"] = pool_tokens / max_model_len if pool_tokens and max_model_len else None
    warmth = heat(samples)
    metrics["j_per_token"] = warmth.energy_j / output if warmth.energy_j is not None and output else None
    errors: list[str] = []
    for r in results:
        if not r.success and r.error not in errors and len(errors) < 5:
            errors.append(r.error)
    return ArmFigures(
        metrics=metrics,
        requests=len(results),
        completed=len(ok),
        failed=len(results) - len(ok),
        errors=errors,
        duration_s=elapsed,
        prompt_tokens=sum(r.prompt_len or 0 for r in ok),
        output_tokens=output,
        heat=warmth,
        intervals=intervals(results, elapsed, request_figures),
    )
