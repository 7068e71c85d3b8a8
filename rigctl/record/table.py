"""The report as the owners publish it: one column per profile (or boot), the rows they compare."""

from __future__ import annotations

from collections.abc import Sequence

from rigctl import fmt
from rigctl.record.derive import ServedFigures


def _mark(column: ServedFigures, name: str, text: str) -> str:
    return f"{text} (few)" if name in column.low_traffic and text != "n/a" else text


def render(columns: Sequence[ServedFigures], where: str) -> str:
    head = [""] + [
        c.profile
        + (
            f" [{c.boots[0][:12]}]"
            if len(c.boots) == 1 and len(columns) > 1 and sum(1 for d in columns if d.profile == c.profile) > 1
            else ""
        )
        for c in columns
    ]
    rows: list[list[str]] = [head]

    def add(label: str, cells: list[str]) -> None:
        rows.append([label, *cells])

    add(
        "served",
        [
            (
                f"{c.hours_served:.1f} h"
                if c.hours_served >= 1
                else f"{c.hours_served * 60:.0f} min"
                if c.hours_served >= 1 / 60
                else f"{c.hours_served * 3600:.0f} s"
            )
            + f", {len(c.boots)} boot(s)"
            for c in columns
        ],
    )
    add("requests", [_mark(c, "requests", fmt.count(c.requests)) for c in columns])
    add("KV pool", [f"{c.pool_tokens:,}" if c.pool_tokens else "n/a" for c in columns])
    add(
        "peak resident context",
        [
            f"{c.peak_resident_tokens:,} ({fmt.frac_pct(c.peak_resident_share)})" if c.peak_resident_tokens is not None else "n/a"
            for c in columns
        ],
    )
    add("preemptions", [fmt.count(c.preemptions) for c in columns])
    add(
        "prefix hit rate",
        [_mark(c, "prefix_hit_rate", fmt.frac_pct(c.prefix_hit_rate)) + (" ◀ FELL" if c.regression else "") for c in columns],
    )
    add("  after warm-up", [_mark(c, "prefix_hit_rate_warm", fmt.frac_pct(c.prefix_hit_rate_warm)) for c in columns])
    # finished_reason "length": the request reached its max_tokens (or the context): a stop, not a fault
    add("length-stopped / aborted / errors", [f"{c.truncated:,.0f} / {c.aborted:,.0f} / {c.errors:,.0f}" for c in columns])
    for name, label in (("ttft", "TTFT"), ("prefill", "prefill"), ("tpot", "TPOT"), ("e2e", "e2e")):
        add(
            f"{label} mean / p95",
            [
                _mark(
                    c,
                    f"{name}_mean_s",
                    f"{fmt.latency(c.latency[name]['mean'])} / {c.p95_bounds.get(name, '')}{fmt.latency(c.latency[name]['p95'])}",
                )
                for c in columns
            ],
        )
    if any(c.offloaded for c in columns):
        add("KV offload: ext. hit rate", [fmt.frac_pct(c.external_hit_rate) for c in columns])
        add(
            "  stored / loaded",
            [f"{fmt.gib(c.offload_store_bytes, 2)} / {fmt.gib(c.offload_load_bytes, 2)}" for c in columns],
        )
    add("mean power", [fmt.watts(c.mean_power_w) for c in columns])
    add("J/token", [f"{c.j_per_token:.2f}" if c.j_per_token is not None else "n/a" for c in columns])
    add("prefix cache", ["cold (no query)" if c.cold_cache else "used" for c in columns])
    lines = [fmt.table(rows, "<" + ">" * len(columns)), ""]
    for c in columns:
        if c.regression:
            lines.append(f"warning: {c.regression.describe()}")
    if any(c.low_traffic for c in columns):
        lines.append("(few): too little traffic behind that figure to compare on")
    lines.append(f"from {where}")
    return "\n".join(lines)
