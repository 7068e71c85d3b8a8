"""`rigctl bench calibrate PLAN`: the rig's boot-to-boot noise, measured. The plan's control runs
alone on N fresh servers (A/A/A..., the plan's workload, every arm kept raw like any bench), and
how far each figure spread over them is kept for this rig, profile and workload: a later bench of
that plan never promotes a change smaller than it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from rigctl.bench.checks import CheckedPlan
from rigctl.bench.live import ArmProgress
from rigctl.bench.noise import Noise, keep, spread, workload_key
from rigctl.bench.run import BenchResult, run_bench
from rigctl.serve.context import ServeContext

MIN_RUNS, MAX_RUNS = 3, 12


@dataclass(frozen=True)
class Calibration:
    result: BenchResult
    noise: Noise | None  # None: the runs did not all complete (nothing kept)
    values: dict[str, list[float]]  # metric -> the figure of each run


def calibrate(
    ctx: ServeContext,
    checked: CheckedPlan,
    runs: int,
    *,
    on_progress: Callable[[ArmProgress], None] = lambda progress: None,
    stop: threading.Event | None = None,
    lock_wait: float = 0.0,
) -> Calibration:
    plan = replace(checked.plan, runs=runs, name=f"{checked.plan.name}-calibrate")
    result = run_bench(
        ctx, replace(checked, plan=plan, candidates={}, changes={}), on_progress=on_progress, stop=stop, lock_wait=lock_wait
    )
    values: dict[str, list[float]] = {}
    for arm in result.arms:
        for metric, value in arm.figures.metrics.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values.setdefault(metric, []).append(float(value))
    rig = ctx.rig.backend if ctx.rig else None
    if result.status != "complete" or len(result.arms) != runs or rig is None:
        return Calibration(result, None, values)
    spreads = {metric: s for metric, found in values.items() if len(found) == runs and (s := spread(found)) is not None}
    noise = Noise(rig, plan.control, workload_key(plan.workload), runs, time.time(), spreads)
    keep(noise)
    return Calibration(result, noise, values)
