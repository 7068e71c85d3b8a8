"""Engine figures as text lines and JSON: the same words in the CLI and the TUI."""

from __future__ import annotations

import dataclasses
from typing import Any

from rigctl import fmt
from rigctl.engine.derive import Estimate, IntervalFigures
from rigctl.engine.metrics import EngineSnapshot


def ms(seconds: float | Estimate | None) -> str:
    """A latency for display; an Estimate keeps what the buckets know: `< 300 ms`, `> 80.0 s`."""
    if isinstance(seconds, Estimate):
        return (f"{seconds.relation} " if seconds.relation != "~" else "") + ms(seconds.value)
    if not fmt.known(seconds):
        return fmt.NA
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def quantiles(figures: IntervalFigures, key: str) -> str:
    """`p50 12 ms p95 40 ms`; `idle` only when nothing decodes; else that none finished in the window."""
    q = figures.latency.get(key)
    if q is None:
        return "n/a"
    if not q.count:
        if not figures.decoding:
            return "idle"
        window = figures.latency_seconds or figures.seconds
        return f"none finished in {window:.0f} s"
    return f"p50 {ms(q.p50)} p95 {ms(q.p95)}"


def kv_line(snap: EngineSnapshot) -> str:
    pool = f" of {fmt.count(snap.kv_pool_tokens)} tokens" if snap.kv_pool_tokens is not None else " (pool n/a)"
    conc = f" ({fmt.number(snap.kv_max_concurrency, 2)}x at max_model_len)" if snap.kv_max_concurrency else ""
    return f"KV cache {fmt.frac_pct(snap.kv_usage)}{pool}{conc}"


def latency_line(figures: IntervalFigures) -> str:
    window = f" (over {figures.latency_seconds:.0f} s)" if figures.latency_seconds else ""
    return (
        "  ".join(f"{label} {quantiles(figures, key)}" for key, label in (("ttft", "TTFT"), ("itl", "ITL"), ("tpot", "TPOT")))
        + window
    )


def spec_line(figures: IntervalFigures) -> str | None:
    if figures.acceptance_rate is None and figures.mean_acceptance_length is None:
        return None
    positions = " ".join(fmt.number(p, 2) for p in figures.acceptance_per_position)
    return (
        f"spec decode: acceptance {fmt.frac_pct(figures.acceptance_rate)}, mean length "
        f"{fmt.number(figures.mean_acceptance_length, 2)}" + (f" (per position {positions})" if positions else "")
    )


def text(snap: EngineSnapshot, figures: IntervalFigures | None) -> str:
    waiting_by = ", ".join(f"{k} {fmt.count(v)}" for k, v in sorted(snap.waiting_by_reason.items()))
    lines = [
        f"model: {', '.join(snap.model_names) or 'n/a'}  ({len(snap.engines)} engine{'s' * (len(snap.engines) != 1)})",
        f"requests: running {fmt.count(snap.running)}, waiting {fmt.count(snap.waiting)}"
        + (f" ({waiting_by})" if waiting_by else ""),
        kv_line(snap),
    ]
    if len(snap.engines) > 1:
        for e in snap.engines:
            lines.append(
                f"  engine {e.engine}: running {fmt.count(e.running)}, waiting {fmt.count(e.waiting)}, "
                f"KV {fmt.frac_pct(e.kv_usage)} of {fmt.count(e.kv_pool_tokens)}"
            )
    if snap.truncated:
        lines.append("warning: the exposition ended without a newline: its last line may be cut")
    if snap.refused:  # counted as absent, never summed into a figure; the value itself may be an infinity
        families = sorted({said.split(": must be ", 1)[0] for said in snap.refused})
        lines.append(f"warning: values no engine gives, not counted: {', '.join(families[:4])}")
    if figures is None:
        hits, queries = snap.counter("prefix_hits"), snap.counter("prefix_queries")
        lifetime = hits / queries if hits is not None and queries else snap.legacy_hit_rate
        lines.append(f"prefix cache: hit rate {fmt.frac_pct(lifetime)} (lifetime)")
        lines.append("(one scrape: rates and latencies need two; give --file twice or watch the live server)")
        return "\n".join(lines)
    if figures.restarted:
        lines.append("vLLM RESTARTED during this interval: a counter went down; figures count from the restart")
    lines += [
        (
            f"prefix cache: hit rate {fmt.frac_pct(figures.hit_rate)} (interval), "
            f"{fmt.frac_pct(figures.hit_rate_lifetime)} (lifetime)"
        ),
        (
            f"throughput: prompt {fmt.number(figures.prompt_tps, 1, ' tok/s')} (computed "
            f"{fmt.number(figures.prefill_compute_tps, 1, ' tok/s')}), generation "
            f"{fmt.number(figures.generation_tps, 1, ' tok/s')}"
        ),
        f"latency: {latency_line(figures)}",
        f"preemptions: {fmt.count(figures.preemptions)} in {figures.seconds:.1f} s",
    ]
    spec = spec_line(figures)
    if spec:
        lines.append(spec)
    if figures.finished:
        lines.append("finished: " + ", ".join(f"{k} {fmt.count(v)}" for k, v in sorted(figures.finished.items())))
    if fmt.known(figures.power_w):
        per_token = f", {fmt.number(figures.joules_per_token, 2)} J/token" if figures.joules_per_token else ", J/token n/a (idle)"
        lines.append(f"energy: {fmt.number(figures.power_w, 0)} W mean{per_token}")
    return "\n".join(lines)


def to_json(snap: EngineSnapshot, figures: IntervalFigures | None) -> dict[str, Any]:
    data: dict[str, Any] = {"snapshot": dataclasses.asdict(snap)}
    data["snapshot"]["histograms"] = {k: {"count": h.count, "sum": h.sum} for k, h in snap.histograms.items()}
    data["snapshot"]["accepted_per_position"] = {str(k): v for k, v in snap.accepted_per_position.items()}
    data["interval"] = None if figures is None else dataclasses.asdict(figures)
    return data
