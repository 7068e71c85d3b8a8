"""The engine panel: what vLLM reports, read from /metrics; stale values stay, marked."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from rigctl import fmt
from rigctl.engine.poller import EngineState
from rigctl.engine.report import ms
from rigctl.history import RingBuffer
from rigctl.serve.status import ServingStatus
from rigctl.tui.format import level
from rigctl.tui.widgets.meter import Meter
from rigctl.tui.widgets.spark import Spark


def _q(state: EngineState, key: str) -> str:
    q = state.figures.latency.get(key) if state.figures else None
    if q is None:
        return "n/a"
    return "idle" if not q.count else f"p50 {ms(q.p50)} p95 {ms(q.p95)}"


def engine_lines(state: EngineState, serving: ServingStatus | None) -> dict[str, str]:
    """The panel's text, line by line (pure: tested without a screen)."""
    snap, f = state.snapshot, state.figures
    probe = state.probe
    profile = serving.active_profile if serving and serving.active_profile else (state.record.profile
                                                                                 if state.record else None)
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
    cache = (f"prefix hit {fmt.frac_pct(f.hit_rate if f else None)} (life "
             f"{fmt.frac_pct(f.hit_rate_lifetime if f else None)}){restarted}")
    load = (f"run {fmt.count(snap.running)} wait {fmt.count(snap.waiting)} preempt "
            f"{fmt.count(f.preemptions if f else None)}  prompt {fmt.number(f.prompt_tps if f else None, 0)} "
            f"gen {fmt.number(f.generation_tps if f else None, 1)} tok/s")
    latency = f"TTFT {_q(state, 'ttft')}  TPOT {_q(state, 'tpot')}"
    extra = []
    if f and f.mean_acceptance_length is not None:
        extra.append(f"MTP accept {fmt.frac_pct(f.acceptance_rate)} len {f.mean_acceptance_length:.2f}")
    if f and f.power_w is not None:
        extra.append(f"{f.power_w:,.0f} W, " + (f"{f.joules_per_token:.2f} J/tok" if f.joules_per_token else
                                                 "J/tok n/a (idle)"))
    return {"title": title, "kv": f"{fmt.frac_pct(snap.kv_usage)}{pool}{conc}", "cache": cache, "load": load,
            "latency": latency, "extra": "   ".join(extra)}


class EnginePanel(Vertical):
    def __init__(self) -> None:
        super().__init__(id="engine-panel")
        self.border_title = "Engine"
        self._hits = RingBuffer(120)
        self.lines: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Static("waiting for the first scrape...", id="engine-title", classes="card-line")
        yield Meter("KV", id="engine-kv")
        with Horizontal(classes="sparks"):
            yield Static("", id="engine-cache", classes="card-line")
            yield Spark("hit", 1.0, id="engine-hit-spark")
        yield Static("", id="engine-load", classes="card-line")
        yield Static("", id="engine-latency", classes="card-line")
        yield Static("", id="engine-extra", classes="card-line")

    def show(self, state: EngineState, serving: ServingStatus | None) -> None:
        self.lines = engine_lines(state, serving)
        self.set_class(state.stale, "-stale")
        self.set_class(state.error is not None and state.snapshot is None, "-down")
        for key in ("title", "cache", "load", "latency", "extra"):
            widget = self.query_one(f"#engine-{key}", Static)
            if str(widget.content) != self.lines[key]:
                widget.update(self.lines[key])
        meter = self.query_one("#engine-kv", Meter)
        usage = state.snapshot.kv_usage if state.snapshot else None
        meter.fraction, meter.text = usage, self.lines["kv"]
        meter.set_classes(level(usage, warn=0.9, hot=0.98))
        if state.figures and state.figures.hit_rate is not None and not state.error:
            self._hits.push(state.figures.hit_rate)
            self.query_one("#engine-hit-spark", Spark).data = self._hits.snapshot()
