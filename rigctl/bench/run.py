"""A bench run: the arms in the plan's order, each on a server freshly started for it by the
switch transaction, under the rig lock for the whole run (a switch from anywhere else is
refused until it ends); then the verdict, and the control serving again.

A switch that fails stops the run and puts the control back; so does Ctrl-C (or `stop`).
Whatever happens, the arms that finished stay in the run's directory.
"""

from __future__ import annotations

import platform
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from rigctl import __version__
from rigctl.bench.arm import ArmProgress, ArmRecord, measure_arm
from rigctl.bench.checks import CheckedPlan
from rigctl.bench.live import LiveWriter
from rigctl.bench.plan import BenchPlan
from rigctl.bench.rawdir import RawDir
from rigctl.bench.verdict import Verdict, decide
from rigctl.errors import ExitCode
from rigctl.jsonio import DamagedFile
from rigctl.serve import boots
from rigctl.serve.lock import RigLock
from rigctl.serve.serving import find_running
from rigctl.serve.statefiles import read_record
from rigctl.serve.steps import Interrupt, ServeContext
from rigctl.serve.switch import SwitchOutcome, switch


@dataclass
class BenchResult:
    plan: BenchPlan
    raw: RawDir
    arms: list[ArmRecord] = field(default_factory=list)
    verdict: Verdict | None = None
    status: str = "complete"  # complete | failed | interrupted
    message: str = ""
    serving: str | None = None  # the profile serving when the run ended
    changes: list[dict[str, str | None]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def exit_code(self) -> ExitCode:
        if self.status != "complete" or self.verdict is None:
            return ExitCode.FAILURE
        return {"promote": ExitCode.OK, "reject": ExitCode.REJECTED}.get(self.verdict.verdict, ExitCode.INCONCLUSIVE)

    def to_json(self) -> dict[str, Any]:
        plan, verdict = self.plan, self.verdict
        return {
            "plan": plan.name, "description": plan.description, "plan_file": str(plan.path),
            "control": plan.control, "candidate": plan.candidate, "order": plan.order,
            "workload": asdict(plan.workload), "status": self.status, "message": self.message,
            "verdict": verdict.verdict if verdict else None, "reason": verdict.reason if verdict else self.message,
            "gate": {"metric": plan.gate.metric, "direction": plan.gate.direction, "min_change": plan.gate.min_change,
                     "guards": [asdict(g) for g in plan.gate.guards]},
            "control_mean": verdict.control_mean if verdict else None,
            "candidate_mean": verdict.candidate_mean if verdict else None,
            "change": verdict.change if verdict else None,
            "control_drift": verdict.control_drift if verdict else None,
            "guards": [asdict(g) for g in verdict.guards] if verdict else [],
            "notes": list(verdict.notes) if verdict else [], "warnings": self.warnings, "changes": self.changes,
            "arms": [a.to_json() for a in self.arms], "serving": self.serving, "raw_dir": str(self.raw.path),
        }


def _serving_now() -> str | None:
    try:
        record = read_record()
    except (DamagedFile, OSError):
        return None
    return record.profile if record else None


def _boot_of(profile: str, since: float, outcome: SwitchOutcome) -> dict[str, Any]:
    """The boot record the switch appended for this arm (the attempt's report if it is missing)."""
    for record in reversed(boots.read_all()):
        if record.profile == profile and record.when >= since:
            return record.to_json()
    report = outcome.attempt.report if outcome.attempt else None
    return {"profile": profile, "kv_tokens": report.pool_tokens if report else None,
            "max_concurrency": report.max_concurrency if report else None,
            "max_model_len": report.concurrency_len if report else None,
            "boot_seconds": round(outcome.attempt.seconds, 2) if outcome.attempt else None}


def _switch(ctx: ServeContext, profile: str) -> SwitchOutcome:
    ctx.interrupt = Interrupt()  # a Ctrl-C that stopped the previous step must not stop this switch
    return switch(ctx, profile, rollback=True)


def _restore(ctx: ServeContext, result: BenchResult, control: str) -> None:
    """Put the control back if anything else serves (or nothing does)."""
    if _serving_now() == control:
        return
    ctx.say("step", f"putting the control {control} back")
    outcome = _switch(ctx, control)
    if outcome.exit_code != ExitCode.OK:
        result.message += f"; the control {control} could not be put back: {outcome.message}"


def run_bench(ctx: ServeContext, checked: CheckedPlan, *, keep_candidate: bool = False,
              on_progress: Callable[[ArmProgress], None] = lambda progress: None,
              stop: threading.Event | None = None, lock_wait: float = 0.0) -> BenchResult:
    plan = checked.plan
    stop = stop or threading.Event()
    with RigLock(f"bench {plan.name}", lock_wait):  # RigBusyError (exit 1) before anything is written
        raw = RawDir.create(plan.name)
        result = BenchResult(plan, raw, changes=[{"what": c.what, "control": c.before, "candidate": c.after}
                                                 for c in checked.changes], warnings=list(checked.warnings))
        raw.write_text("plan.toml", plan.text)
        raw.write_json("run.json", {"plan": plan.name, "plan_file": str(plan.path), "started": time.time(),
                                    "rigctl": __version__, "host": platform.node(),
                                    "rig": ctx.rig.backend if ctx.rig else None, "order": plan.order,
                                    "arms": plan.arms(), "workload": asdict(plan.workload),
                                    "gate": asdict(plan.gate), "changes": result.changes,
                                    "warnings": result.warnings, "serving_before": _serving_now()})
        live = LiveWriter(plan.name, raw.path)

        def progress(step: ArmProgress) -> None:
            live(step)
            on_progress(step)

        try:
            _arms(ctx, plan, result, progress, stop)
        except KeyboardInterrupt:
            result.status, result.message = "interrupted", "interrupted at the second Ctrl-C"
            _finish(result)
            live.close()
            raise
        live.close()
        if result.status == "complete":
            result.verdict = decide(plan.gate, [a.outcome() for a in result.arms])
            promoted = result.verdict.verdict == "promote"
            if keep_candidate and promoted and plan.candidate != plan.control:
                ctx.say("step", f"promoted: {plan.candidate} serves on (--keep-candidate)")
                outcome = _switch(ctx, plan.candidate)
                if outcome.exit_code != ExitCode.OK:
                    result.message = f"promoted, but {plan.candidate} did not start again: {outcome.message}"
                    _restore(ctx, result, plan.control)
            else:
                _restore(ctx, result, plan.control)
        else:
            _restore(ctx, result, plan.control)
        result.serving = _serving_now()
        _finish(result)
    return result


def _finish(result: BenchResult) -> None:
    try:
        result.raw.write_json("verdict.json", result.to_json())
    except OSError as exc:
        result.warnings.append(f"verdict.json was not written: {exc.strerror or exc}")


def _arms(ctx: ServeContext, plan: BenchPlan, result: BenchResult, on_progress: Callable[[ArmProgress], None],
          stop: threading.Event) -> None:
    arms = plan.arms()
    for number, (role, profile) in enumerate(arms, start=1):
        if stop.is_set():
            result.status, result.message = "interrupted", f"stopped before arm {number} of {len(arms)}"
            return
        ctx.say("step", f"arm {number}/{len(arms)}: {role} {profile}")
        on_progress(ArmProgress(number, len(arms), role, profile, "switching"))
        since = time.time()
        outcome = _switch(ctx, profile)
        if outcome.exit_code != ExitCode.OK:
            result.status = "failed"
            result.message = f"arm {number} ({role} {profile}): the switch failed: {outcome.message}"
            return
        running = find_running(ctx.settings, ctx.launcher, thorough=False)
        if running.record is None or running.launcher is None:
            result.status = "failed"
            result.message = f"arm {number} ({role} {profile}): switched, but no server record is there to measure"
            return
        arm = measure_arm(number, len(arms), role, profile, running.record, running.launcher.api_key(running.record),
                          plan.workload, ctx.sampler, result.raw, _boot_of(profile, since, outcome), on_progress,
                          stop)
        result.arms.append(arm)
        if stop.is_set():
            result.status, result.message = "interrupted", f"stopped during arm {number} of {len(arms)}"
            return
