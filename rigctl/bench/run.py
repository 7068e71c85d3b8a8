"""A bench run: the arms in the plan's order, each on a server freshly started for it by the
switch transaction, under the rig lock for the whole run (a switch from anywhere else is
refused until it ends); then the verdict, and what served before the run serving again (the
control when nothing did).

The profiles are resolved once, before the first arm (rigctl bench check's CheckedPlan): an edit
of their files during the run changes nothing of it, and the control as resolved is what every
failed step rolls back to and what is put back at the end; a bench never makes its candidate the
last good profile. A switch that fails, a fault mid-arm (a full disk), a server that dies and
Ctrl-C all stop the run and put the control back; a second Ctrl-C leaves at once, saying what
serves. Whatever happens, the arms that finished stay in the run's directory, and a run that ends
without the control serving (or whose rigctl dies) leaves the mark bench/live.py describes.
"""

from __future__ import annotations

import functools
import platform
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from rigctl import __version__, fmt
from rigctl.bench.arm import ArmRecord, measure_arm, server_death
from rigctl.bench.checks import CheckedPlan
from rigctl.bench.eta import RunClock, last_boots
from rigctl.bench.live import ArmProgress, LiveWriter
from rigctl.bench.noise import known
from rigctl.bench.plan import BenchPlan
from rigctl.bench.rawdir import RawDir
from rigctl.bench.verdict import Verdict, decide
from rigctl.errors import ExitCode, RigctlError
from rigctl.serve.context import ServeContext
from rigctl.serve.launchers import launcher_of
from rigctl.serve.lock import RigLock
from rigctl.serve.looked import left_behind, serving_name
from rigctl.serve.steps import Prepared
from rigctl.serve.switch import SwitchOutcome, switch
from rigctl.state import boots
from rigctl.state.serving import find_running
from rigctl.state.statefiles import read_record

RunStatus = Literal["complete", "failed", "interrupted", "cut_short"]  # cut_short: said by a later rigctl


def run_status(value: object) -> RunStatus:
    """A status read back from a kept run; anything else is a run that failed."""
    known: dict[str, RunStatus] = {
        "complete": "complete",
        "failed": "failed",
        "interrupted": "interrupted",
        "cut_short": "cut_short",
    }
    return known.get(value, "failed") if isinstance(value, str) else "failed"


@dataclass
class BenchResult:
    plan: BenchPlan
    raw: RawDir
    arms: list[ArmRecord] = field(default_factory=list)
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # per candidate, in the plan's order
    status: RunStatus = "complete"
    message: str = ""
    serving: str | None = None  # the profile serving when the run ended
    restored: str | None = None  # what served before the run, put back at its end (None: the control was)
    changes: dict[str, list[dict[str, str | None]]] = field(default_factory=dict)  # per candidate
    warnings: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict | None:
        """The run's verdict: its candidate's; of several, the best promoted one, else an
        inconclusive one if any, else the first rejection."""
        found = list(self.verdicts.values())
        if not found:
            return None
        promoted = [v for v in found if v.verdict == "promote"]
        if promoted:
            return max(promoted, key=lambda v: v.change or 0.0)
        return next((v for v in found if v.verdict == "inconclusive"), found[0])

    def exit_code(self) -> ExitCode:
        verdict = self.verdict
        if self.status != "complete" or verdict is None:
            return ExitCode.FAILURE
        return {"promote": ExitCode.OK, "reject": ExitCode.REJECTED}.get(verdict.verdict, ExitCode.INCONCLUSIVE)

    def to_json(self) -> dict[str, Any]:
        plan, verdict = self.plan, self.verdict
        return {
            "plan": plan.name,
            "description": plan.description,
            "plan_file": str(plan.path),
            "control": plan.control,
            "candidate": verdict.candidate if verdict else plan.candidate,
            "order": plan.order,
            "workload": asdict(plan.workload),
            "status": self.status,
            "message": self.message,
            "verdict": verdict.verdict if verdict else None,
            "reason": verdict.reason if verdict else self.message,
            "reasons": list(verdict.reasons) if verdict else ([self.message] if self.message else []),
            "gate": {
                "metric": plan.gate.metric,
                "direction": plan.gate.direction,
                "min_change": plan.gate.min_change,
                "min_requests": plan.gate.min_requests,
                "guards": [asdict(g) for g in plan.gate.guards],
            },
            "control_mean": verdict.control_mean if verdict else None,
            "candidate_mean": verdict.candidate_mean if verdict else None,
            "change": verdict.change if verdict else None,
            "control_drift": verdict.control_drift if verdict else None,
            "guards": [asdict(g) for g in verdict.guards] if verdict else [],
            "notes": list(verdict.notes) if verdict else [],
            "evidence": list(verdict.evidence) if verdict else [],
            "warnings": self.warnings,
            "changes": self.changes.get(plan.candidate, []),
            "candidates": [
                {
                    "profile": name,
                    "verdict": v.verdict if v else None,
                    "reasons": list(v.reasons) if v else [],
                    "change": self.changes.get(name, []),
                    "gain": v.change if v else None,
                    "control_mean": v.control_mean if v else None,
                    "candidate_mean": v.candidate_mean if v else None,
                    "candidate_drift": v.candidate_drift if v else None,
                    "guards": [asdict(g) for g in v.guards] if v else [],
                    "notes": list(v.notes) if v else [],
                    "evidence": list(v.evidence) if v else [],
                }
                for name in plan.candidates
                for v in [self.verdicts.get(name)]
            ],
            "arms": [a.to_json() for a in self.arms],
            "serving": self.serving,
            "restored": self.restored,
            "raw_dir": str(self.raw.path),
        }


def judge(
    plan: BenchPlan, arms: list[ArmRecord], changes: dict[str, list[dict[str, str | None]]], rig: str | None
) -> dict[str, Verdict]:
    """A verdict per candidate, each against the controls around it, with the rig's measured
    noise where it is known."""
    outcomes = [a.outcome(plan.gate.metric) for a in arms]
    measured = known(rig, plan.control, plan.workload) if rig else None
    noise = measured.of(plan.gate.metric) if measured else None
    return {
        name: decide(plan.gate, outcomes, name, noise, len(changes.get(name, [])) if name in changes else None)
        for name in plan.candidates
    }


def _boot_of(profile: str, since: float, outcome: SwitchOutcome) -> dict[str, Any]:
    """The boot record the switch appended for this arm (the attempt's report if it is missing)."""
    for record in reversed(boots.read_all()):
        if record.profile == profile and record.when >= since:
            return record.to_json()
    report = outcome.attempt.report if outcome.attempt else None
    return {
        "profile": profile,
        "kv_tokens": report.pool_tokens if report else None,
        "max_concurrency": report.max_concurrency if report else None,
        "max_model_len": report.concurrency_len if report else None,
        "boot_seconds": round(outcome.attempt.seconds, 2) if outcome.attempt else None,
    }


def _switch(ctx: ServeContext, target: Prepared, control: Prepared) -> SwitchOutcome:
    """A switch to a profile as the bench resolved it at the start (an edit of its file since
    changes nothing), rolling back to the control as resolved, which stays the last good profile."""
    ctx.interrupt.reset()  # a Ctrl-C that stopped the previous step must not stop this switch
    # no drain: the bench's own traffic is over; the verification runs, and its counters are the
    # arm's cold baseline (bench/arm.py)
    return switch(ctx, target.profile.name, rollback=True, prepared=target, fallback=control, drain=0)


class _Left(Exception):
    """A second Ctrl-C inside a switch: the switch said what it left; the bench leaves too."""


def _restore(ctx: ServeContext, result: BenchResult, checked: CheckedPlan) -> None:
    """Put back what served before the run (else the control) if anything else serves (or nothing
    does); a failed boot of it falls back to the control."""
    target, control = checked.put_back, checked.control
    name = target.profile.name
    if serving_name(ctx) == name:
        return
    what = f"the control {name}" if target is control else f"{name}, which served before the bench"
    ctx.say("step", f"putting {what} back")
    outcome = _switch(ctx, target, control)
    if outcome.status == "interrupted":
        raise _Left(outcome.message)
    if outcome.exit_code != ExitCode.OK:
        result.message += f"; {what} could not be put back: {outcome.message}"
    elif target is not control:
        result.restored = name


def run_bench(
    ctx: ServeContext,
    checked: CheckedPlan,
    *,
    keep_candidate: bool = False,
    on_progress: Callable[[ArmProgress], None] = lambda progress: None,
    stop: threading.Event | None = None,
    lock_wait: float = 0.0,
) -> BenchResult:
    """The run. Whatever goes wrong once an arm has switched (a failed boot, a full disk, a
    server that dies, Ctrl-C), the control serves at the end, or the result says exactly what
    serves and why the control could not be put back."""
    plan = checked.plan
    stop = stop or threading.Event()
    with RigLock(f"bench {plan.name}", lock_wait):  # RigBusyError (exit 1) before anything is written
        try:
            raw = RawDir.create(plan.name)
            raw.write_text("plan.toml", plan.text)
            result = BenchResult(
                plan,
                raw,
                changes={
                    name: [{"what": c.what, "control": c.before, "candidate": c.after} for c in changed]
                    for name, changed in checked.changes.items()
                },
                warnings=list(checked.warnings),
            )
            if plan.requests:  # the owner's requests as this run sent them: a report needs no other file
                raw.write_lines("workload.jsonl", (r.to_json() for r in plan.requests))
            raw.write_json(
                "run.json",
                {
                    "plan": plan.name,
                    "plan_file": str(plan.path),
                    "started": time.time(),
                    "rigctl": __version__,
                    "host": platform.node(),
                    "rig": ctx.rig.backend if ctx.rig else None,
                    "order": plan.order,
                    "arms": plan.arms(),
                    "workload": asdict(plan.workload),
                    "gate": asdict(plan.gate),
                    "changes": result.changes,
                    "warnings": result.warnings,
                    "serving_before": serving_name(ctx),
                },
            )
            live = LiveWriter(plan.name, raw.path, plan.control, ", ".join(plan.candidates), _serving_boot())
        except OSError as exc:
            raise RigctlError(f"the bench's raw files cannot be written ({_reason(exc)}); nothing was switched") from None

        clock = RunClock(plan.arms(), last_boots([plan.control, *plan.candidates]), plan.workload.duration_s)
        first = clock.estimate(ArmProgress(0, len(plan.arms()), "control", plan.control, "starting"))
        ctx.say(
            "step",
            f"{len(plan.arms())} arms, about {first.describe(fmt.seconds)} in all (boots from each "
            f"profile's last{'; the measuring known after the first arm' if first.floor else ''})",
        )

        def progress(step: ArmProgress) -> None:
            step = clock.stamp(step)
            live(step)
            on_progress(step)

        try:
            _run(ctx, checked, result, progress, stop, keep_candidate)
        except (KeyboardInterrupt, _Left) as exc:
            left = str(exc) if isinstance(exc, _Left) else f"left at the second Ctrl-C: {left_behind(ctx)}"
            result.status, result.message = "interrupted", left
        result.serving = serving_name(ctx)
        best = result.verdict
        wanted = best.candidate if keep_candidate and best and best.verdict == "promote" else checked.put_back.profile.name
        if result.serving == wanted:
            live.close()
        else:
            live.leave(result.message or f"the bench ended with {result.serving or 'nothing'} serving")
            result.message += (
                (f"; the control {plan.control} was not put back: `rigctl bench --restore` puts it back")
                if "bench --restore" not in result.message
                else ""
            )
        _finish(result)
    return result


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename + ': ' if exc.filename else ''}{exc.strerror}"
    return str(exc) or type(exc).__name__


def _run(
    ctx: ServeContext,
    checked: CheckedPlan,
    result: BenchResult,
    progress: Callable[[ArmProgress], None],
    stop: threading.Event,
    keep_candidate: bool,
) -> None:
    plan = checked.plan
    try:
        _arms(ctx, checked, result, progress, stop)
    except (KeyboardInterrupt, _Left):
        raise
    except Exception as exc:  # noqa: BLE001 - a fault mid-arm (a full disk, a broken read): the control goes back
        arm = len(result.arms) + 1
        result.status = "failed"
        result.message = f"arm {arm} of {len(plan.arms())} broke off: {_reason(exc)}"
        ctx.say("failure", result.message)
        _restore(ctx, result, checked)
        return
    if result.status != "complete" or plan.runs:  # a calibration has no candidate to judge
        _restore(ctx, result, checked)
        return
    result.verdicts = judge(plan, result.arms, result.changes, ctx.rig.backend if ctx.rig else None)
    best = result.verdict
    if keep_candidate and best is not None and best.verdict == "promote" and best.candidate != plan.control:
        ctx.say("step", f"promoted: {best.candidate} serves on (--keep-candidate)")
        outcome = _switch(ctx, checked.resolved(best.candidate), checked.control)
        if outcome.status == "interrupted":
            raise _Left(outcome.message)
        if outcome.exit_code != ExitCode.OK:
            result.message = f"promoted, but {best.candidate} did not start again: {outcome.message}"
            _restore(ctx, result, checked)
        return
    _restore(ctx, result, checked)


def _finish(result: BenchResult) -> None:
    try:
        result.raw.write_json("verdict.json", result.to_json())
    except OSError as exc:
        result.warnings.append(f"verdict.json was not written: {exc.strerror or exc}")


def _arms(
    ctx: ServeContext, checked: CheckedPlan, result: BenchResult, on_progress: Callable[[ArmProgress], None], stop: threading.Event
) -> None:
    plan = checked.plan
    arms = plan.arms()
    for number, (role, profile) in enumerate(arms, start=1):
        if stop.is_set():
            result.status, result.message = "interrupted", f"stopped before arm {number} of {len(arms)}"
            return
        ctx.say("step", f"arm {number}/{len(arms)}: {role} {profile}")
        on_progress(ArmProgress(number, len(arms), role, profile, "switching"))
        since = time.time()
        outcome = _switch(ctx, checked.resolved(profile), checked.control)
        if outcome.status == "interrupted":
            raise _Left(outcome.message)
        if outcome.exit_code != ExitCode.OK:
            result.status = "failed"
            result.message = f"arm {number} ({role} {profile}): the switch failed: {outcome.message}"
            return
        running = find_running(ctx.settings, ctx.launcher, thorough=False)
        launcher = launcher_of(running, ctx.launcher, ctx.settings)
        if running.record is None or launcher is None:
            result.status = "failed"
            result.message = f"arm {number} ({role} {profile}): switched, but no server record is there to measure"
            return
        record = running.record
        arm = measure_arm(
            number,
            len(arms),
            role,
            profile,
            record,
            launcher.api_key(record),
            plan,
            ctx.sampler,
            result.raw,
            _boot_of(profile, since, outcome),
            on_progress,
            stop,
            functools.partial(server_death, launcher, record),
        )
        result.arms.append(arm)
        if stop.is_set():
            result.status, result.message = "interrupted", f"stopped during arm {number} of {len(arms)}"
            return


def _serving_boot() -> str:
    """The boot key of the server serving as the bench begins ("" for none, or a damaged record)."""
    try:
        record = read_record()
    except RigctlError:
        return ""
    return record.boot_key if record is not None else ""
