"""One arm, on the server that serves now (freshly started for it by the switch):

1. /metrics right after the restart proves the prefix cache cold (queries and hits 0);
2. a warm-up whose prompts share no block with the measured ones;
3. /metrics, then the measured requests, with the engine and the GPUs sampled alongside
   (KV usage peak, temperatures, energy), then /metrics again;
4. everything written raw into the run's directory, and the arm's figures from it.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rigctl.bench.live import ArmProgress, Phase
from rigctl.bench.loadgen import LoadTarget, RequestOptions, RequestResult, run_load, schedule
from rigctl.bench.plan import BenchPlan, Role
from rigctl.bench.quality import QualityResult, run_quality
from rigctl.bench.rawdir import RawDir
from rigctl.bench.summary import ArmFigures, GpuReading, Sample, arm_figures
from rigctl.bench.verdict import ArmOutcome
from rigctl.bench.workload import arrivals, prompts_for, request_count
from rigctl.engine.client import EngineClient, EngineHTTPError
from rigctl.engine.coldcache import ColdCheck, cold_check, verification_baseline
from rigctl.engine.metrics import EngineSnapshot, snapshot
from rigctl.engine.prom import ExpositionError, parse
from rigctl.gpu.holders import serving_gpus
from rigctl.gpu.sampler import RigSampler
from rigctl.redact import redact_text
from rigctl.serve.launchers import Launcher
from rigctl.state.logfollow import FileFollower
from rigctl.state.statefiles import ServerRecord
from rigctl.vllm.metric_names import SNAPSHOT_NAMES

SAMPLE_PERIOD = 0.5  # s between looks at the engine and the GPUs during the measured window


@dataclass
class ArmRecord:
    number: int
    role: Role
    profile: str
    cold: ColdCheck
    figures: ArmFigures
    boot: dict[str, Any] = field(default_factory=dict)
    warmup_requests: int = 0
    warmup_failed: int = 0
    serving_gpus: tuple[int, ...] = ()
    started: float = 0.0
    died: str = ""  # the arm's server died while it was measured: how
    quality: QualityResult | None = None

    def outcome(self, metric: str | None = None) -> ArmOutcome:
        return ArmOutcome(
            self.number,
            self.role,
            self.profile,
            self.figures.metrics,
            self.cold.cold,
            self.figures.requests,
            self.figures.failed,
            self.figures.errors[0] if self.figures.errors else "",
            self.figures.heat.peak_c,
            self.died,
            dict(self.figures.intervals),
            self.quality.error if self.quality is not None else "",
        )

    def to_json(self) -> dict[str, Any]:
        f = self.figures
        return {
            "number": self.number,
            "role": self.role,
            "profile": self.profile,
            "started": self.started,
            "cold_cache": self.cold.cold,
            "cold_detail": self.cold.describe(),
            "prefix_cache_queries_at_start": self.cold.queries,
            "prefix_cache_hits_at_start": self.cold.hits,
            "requests": f.requests,
            "completed": f.completed,
            "failed": f.failed,
            "errors": f.errors,
            "duration_s": f.duration_s,
            "prompt_tokens": f.prompt_tokens,
            "output_tokens": f.output_tokens,
            "warmup_requests": self.warmup_requests,
            "warmup_failed": self.warmup_failed,
            "serving_gpus": list(self.serving_gpus),
            "gpu_temp_start_c": f.heat.start_c,
            "gpu_temp_peak_c": f.heat.peak_c,
            "energy_j": f.heat.energy_j,
            "power_w": f.heat.power_w,
            "boot": self.boot,
            "server_died": self.died or None,
            "intervals": {k: list(v) for k, v in f.intervals.items()},
            "quality": self.quality.to_json() if self.quality else None,
            "quality_score": self.quality.value if self.quality else None,
            **f.metrics,
        }


def _scrape(client: EngineClient) -> tuple[str | None, EngineSnapshot | None]:
    try:
        text = client.metrics_text()
    except EngineHTTPError:
        return None, None
    try:
        return text, snapshot(parse(text, names=SNAPSHOT_NAMES), time.time())
    except ExpositionError:
        return text, None


class _Watcher(threading.Thread):
    """Samples the engine and the GPUs while the measured requests run."""

    def __init__(self, base_url: str, api_key: str | None, sampler: RigSampler | None, gpus: tuple[int, ...]) -> None:
        super().__init__(name="bench-watcher", daemon=True)
        self.client = EngineClient(base_url, api_key, timeout=2.0)
        self.sampler = sampler
        self.gpus = frozenset(gpus)
        self.samples: list[Sample] = []
        self.began = time.monotonic()
        self.halt = threading.Event()

    def look(self) -> None:
        _, engine = _scrape(self.client)
        readings: tuple[GpuReading, ...] = ()
        if self.sampler is not None:
            rig = self.sampler.snapshot()
            readings = tuple(
                GpuReading(s.index, s.temperature_c, s.power_w, s.energy_j)
                for s in rig.samples
                if s.index in self.gpus and not s.lost
            )
        self.samples.append(
            Sample(
                time.monotonic() - self.began,
                engine.kv_usage if engine else None,
                engine.running if engine else None,
                engine.waiting if engine else None,
                readings,
            )
        )

    def run(self) -> None:
        while True:
            self.look()
            if self.halt.wait(SAMPLE_PERIOD):
                break

    def finish(self) -> list[Sample]:
        self.halt.set()
        self.join(timeout=10)
        self.look()  # the last reading closes the energy window
        self.client.close()
        return self.samples


def server_death(launcher: Launcher, record: ServerRecord) -> str:
    """How the arm's server died ("" while it runs): its exit, and the last line of its log."""
    if launcher.alive(record):
        return ""
    code = launcher.exit_code(record)
    if code is None or (code == -1 and launcher.name != "process"):
        how = "exited"
    elif code < 0:
        how = f"was killed by {signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else -code}"
    else:
        how = f"exited with status {code}"
    last = ""
    try:
        follower = launcher.follower(record)
        if isinstance(follower, FileFollower):
            follower.skip_to_tail(8192)
            lines = [line for line in follower.read_new() if line.strip()]
            last = redact_text(lines[-1].strip())[:200] if lines else ""
        follower.close()
    except Exception:  # noqa: BLE001 - the log is a courtesy here; the death is what counts
        last = ""
    return f"its server (pid {record.pid}) {how} during the measured requests" + (f": {last}" if last else "")


def measure_arm(
    number: int,
    arms: int,
    role: Role,
    profile: str,
    record: ServerRecord,
    api_key: str | None,
    plan: BenchPlan,
    sampler: RigSampler | None,
    raw: RawDir,
    boot: dict[str, Any],
    on_progress: Callable[[ArmProgress], None],
    stop: threading.Event,
    death: Callable[[], str] = lambda: "",
) -> ArmRecord:
    """`death`: how the arm's server died, asked once the measured requests are over ("" alive)."""
    workload = plan.workload
    stem = raw.arm_stem(number, role)
    model = record.served_names[0] if record.served_names else profile
    target = LoadTarget(record.base_url, model, api_key)
    options = RequestOptions(workload.temperature, workload.ignore_eos, workload.timeout_s)
    prompts = prompts_for(workload, plan.requests)
    total = request_count(workload, plan.requests)

    def progress(
        phase: Phase, done: int = 0, total: int | None = None, rate: float | None = None, eta: float | None = None
    ) -> None:
        on_progress(ArmProgress(number, arms, role, profile, phase, done, total, rate, eta))

    progress("cold check")
    with EngineClient(record.base_url, api_key, timeout=5.0) as client:
        text, cold_snapshot = _scrape(client)
        raw.write_text(f"{stem}.metrics-cold.prom", text or "")
        warmups: list[RequestResult] = []
        if workload.warmup_requests and not stop.is_set():
            progress("warm-up", 0, workload.warmup_requests)
            warm_schedule = ((prompts.warmup(i), 0.0) for i in range(workload.warmup_requests))
            warmups, _ = run_load(target, warm_schedule, workload.concurrency, options, stop=stop)
        text, before = _scrape(client)
        raw.write_text(f"{stem}.metrics-before.prom", text or "")
        gpus = serving_gpus(sampler.snapshot().samples if sampler else (), record.pid)
        watcher = _Watcher(record.base_url, api_key, sampler, gpus)
        watcher.start()
        started = time.time()
        count = {"done": 0, "tokens": 0}
        began = time.monotonic()

        def on_result(result: RequestResult) -> None:
            count["done"] += 1
            count["tokens"] += (result.output_tokens or 0) if result.success else 0
            elapsed = max(1e-9, time.monotonic() - began)
            if total:
                eta = elapsed / count["done"] * (total - count["done"])
            else:
                eta = max(0.0, (workload.duration_s or 0.0) - elapsed)
            progress("measuring", count["done"], total, count["tokens"] / elapsed, eta)

        progress("measuring", 0, total)
        results, elapsed = run_load(
            target,
            schedule(prompts.measured, arrivals(workload, plan.requests)),
            workload.concurrency,
            options,
            workload.duration_s,
            on_result,
            stop,
        )
        samples = watcher.finish()
        died = death()
        text, after = _scrape(client)
        raw.write_text(f"{stem}.metrics-after.prom", text or "")
    quality = None
    if plan.quality is not None and not died and not stop.is_set():
        progress("quality", total or 0, total)
        quality = run_quality(plan.quality, record.base_url, model, api_key, plan.path.parent, profile)
    cold = cold_check(cold_snapshot, before, after, verification_baseline(boot))
    raw.write_lines(f"{stem}.requests.jsonl", (r.to_json() for r in results))
    raw.write_lines(f"{stem}.samples.jsonl", (s.to_json() for s in samples))
    figures = arm_figures(results, elapsed, before, after, samples, boot.get("kv_tokens"), boot.get("max_model_len"))
    arm = ArmRecord(
        number, role, profile, cold, figures, boot, len(warmups), sum(not w.success for w in warmups), gpus, started, died, quality
    )
    raw.write_json(f"{stem}.json", arm.to_json())
    progress("done", figures.completed, figures.requests, figures.metrics.get("output_tok_per_s"), 0.0)
    return arm
