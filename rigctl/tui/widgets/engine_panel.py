"""The engine panel: what vLLM reports, read from /metrics; stale values stay, marked."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.text import Text

from rigctl import fmt
from rigctl.tui.levels import level
from rigctl.tui.ringbuffer import RingBuffer
from rigctl.tui.widgets.bars import level_style, meter_line, spark, theme_style
from rigctl.tui.widgets.lines_widget import LinesWidget

if TYPE_CHECKING:
    from rigctl.engine.poller import EngineState
    from rigctl.state.serving import ServingStatus


def engine_lines(state: EngineState, serving: ServingStatus | None) -> dict[str, str]:
    """The panel's text, line by line (pure: tested without a screen)."""
    snap, f = state.snapshot, state.figures
    probe = state.probe
    profile = serving.active_profile if serving and serving.active_profile else (state.target.label if state.target else None)
    model = ", ".join(probe.models) if probe and probe.models else (", ".join(snap.model_names) if snap else "n/a")
    max_len = probe.max_model_len if probe and probe.max_model_len else None
    title = f"{model} · {profile or 'no profile'} · max_model_len {fmt.count(max_len)}"
    if state.error:
        since = time.strftime("%H:%M:%S", time.localtime(state.since)) if state.since else "?"
        title = f"{title} · DOWN since {since}" if snap else f"no engine: {state.error}"
    if snap is None:
        return {"title": title, "kv": "n/a", "cache": "", "load": "", "latency": "", "extra": ""}
    pool = f" of {fmt.count(snap.kv_pool_tokens)} tok" if snap.kv_pool_tokens is not None else ""
    conc = f" ({snap.kv_max_concurrency:.2f}x)" if snap.kv_max_concurrency else ""
    restarted = "  RESTARTED" if f and f.restarted else ""
    cache = (
        f"prefix hit {fmt.frac_pct(f.hit_rate if f else None)} (life {fmt.frac_pct(f.hit_rate_lifetime if f else None)}){restarted}"
    )
    load = (
        f"run {fmt.count(snap.running)} wait {fmt.count(snap.waiting)} preempt "
        f"{fmt.count(f.preemptions if f else None)}  prompt {fmt.number(f.prompt_tps if f else None, 0)} "
        f"gen {fmt.number(f.generation_tps if f else None, 1)} tok/s"
    )
    from rigctl.engine.report import quantiles  # here: the first frame draws no engine (docs/guide/costs.md)

    window = f" ({f.latency_seconds:.0f} s)" if f and f.latency_seconds else ""
    latency = f"TTFT {quantiles(f, 'ttft')}  TPOT {quantiles(f, 'tpot')}{window}" if f else "TTFT n/a  TPOT n/a"
    extra = []
    if f and f.mean_acceptance_length is not None:
        extra.append(f"MTP accept {fmt.frac_pct(f.acceptance_rate)} len {f.mean_acceptance_length:.2f}")
    if f and (f.offload_store_bps is not None or f.external_hit_rate is not None):
        extra.append(
            f"offload store {fmt.number((f.offload_store_bps or 0) / 1e6, 1)} load "
            f"{fmt.number((f.offload_load_bps or 0) / 1e6, 1)} MB/s, ext hit {fmt.frac_pct(f.external_hit_rate)}"
        )
    if f and f.power_w is not None:
        extra.append(f"{f.power_w:,.0f} W, " + (f"{f.joules_per_token:.2f} J/tok" if f.joules_per_token else "J/tok n/a (idle)"))
    return {
        "title": title,
        "kv": f"{fmt.frac_pct(snap.kv_usage)}{pool}{conc}",
        "cache": cache,
        "load": load,
        "latency": latency,
        "extra": "   ".join(extra),
    }


class EnginePanel(LinesWidget):
    """One widget, its lines rendered together (see LinesWidget); its height follows the lines."""

    DEFAULT_CSS = "EnginePanel { height: auto; }"

    def __init__(self) -> None:
        super().__init__(id="engine-panel")
        self.border_title = "Engine"
        self._hits = RingBuffer(120)
        self.lines: dict[str, str] = {"title": "waiting for the first scrape..."}
        self._usage: float | None = None

    def show(self, state: EngineState, serving: ServingStatus | None) -> None:
        self.lines = engine_lines(state, serving)
        self.set_class(state.stale, "-stale")
        self.set_class(state.error is not None and state.snapshot is None, "-down")
        self._usage = state.snapshot.kv_usage if state.snapshot else None
        if state.figures and state.figures.hit_rate is not None and not state.error:
            self._hits.push(state.figures.hit_rate)
        self.update_lines()

    def build_lines(self, width: int) -> list[Text]:
        rows: list[Text] = []
        for key in ENGINE_LINES:
            text = self.lines.get(key)
            if not text:
                continue
            if key == "kv":
                style = level_style(self.app, level(self._usage, warn=0.9, hot=0.98))
                rows.append(meter_line("KV", self._usage, text, width, style))
            elif key == "cache":
                cache = Text(text + "  ")
                room = width - cache.cell_len - 4
                if room >= 8:
                    cache.append("hit ", style="dim")
                    cache.append(spark(self._hits.snapshot(), min(room, 40), 1.0), style=theme_style(self.app, "accent"))
                rows.append(cache)
            elif not width or cell_len(text) <= width:  # fits: Text.wrap() costs more than the rest
                rows.append(Text(text))
            else:  # long lines wrap into rows of their own rather than being cut
                rows.extend(Text(text).wrap(self.app.console, max(1, width)))
        return rows


ENGINE_LINES = ("title", "kv", "cache", "load", "latency", "extra")
