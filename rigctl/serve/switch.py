"""The switch transaction (docs/DESIGN.md):

validate -> checks that need nothing running -> rig lock -> read what runs *now* ->
refusals (port, foreign VRAM) -> stop -> start -> follow the boot until really ready ->
record. On any failure after the stop (an exit, an error line, a timeout, a launcher
that raised, Ctrl-C): stop what is left, start the last good profile again with its own
time budget, and report both. The state file never says "switching" once this returns.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

from rigctl.errors import ExitCode, StopFailed
from rigctl.gateway.apps_seen import AppsSeen
from rigctl.jsonio import DamagedFile
from rigctl.proc import start_id
from rigctl.serve import preflight
from rigctl.serve.bootwatch import BootResult, not_started
from rigctl.serve.context import ServeContext
from rigctl.serve.drain import Drained
from rigctl.serve.drain_step import DoorHold, drain_before_stop
from rigctl.serve.ending import ending_of
from rigctl.serve.launchers import launcher_of
from rigctl.serve.lock import RigLock
from rigctl.serve.looked import left_behind
from rigctl.serve.steps import Prepared, boot, boot_timeout, prepare, rollback_timeout, stop_server
from rigctl.serve.switch_words import booted_context, switched_words
from rigctl.serve.verify_spec import apps_lose, tool_flags_missing
from rigctl.state.journal import Action, SwitchStatus, append_ending
from rigctl.state.serving import RunningServer, find_running
from rigctl.state.statefiles import ActiveState, ActiveStatus, read_record, read_state, write_state
from rigctl.vllm.bootlog import Failure


@dataclass(frozen=True)
class SwitchOutcome:
    status: SwitchStatus
    target: str
    exit_code: ExitCode
    message: str
    attempt: BootResult | None = None
    rollback: BootResult | None = None
    rollback_profile: str | None = None
    apps: AppsSeen | None = None  # what the apps saw through the front door (None: no door)


def _state(
    ctx: ServeContext,
    status: ActiveStatus,
    profile: str | None,
    last_good: str | None,
    detail: str = "",
    target: str | None = None,
    owner: int | None = None,
) -> bool:
    """Write the state file; a failure is said (the server record stays the truth) but never raised."""
    try:
        write_state(
            ActiveState(
                profile=profile,
                last_good=last_good,
                status=status,
                since=time.time(),
                detail=detail,
                target=target,
                owner_pid=owner,
                owner_start=start_id(owner) if owner else None,
            )
        )
        return True
    except OSError as exc:
        ctx.say("warning", f"the state file could not be written ({exc.strerror or exc}): rigctl status may lag")
        return False


def _previous_state(ctx: ServeContext) -> ActiveState | None:
    try:
        return read_state()
    except DamagedFile as exc:
        ctx.say("warning", f"{exc}; it will be rewritten")
        return None


def _refused(ctx: ServeContext, target: str, reason: str, running: str | None) -> SwitchOutcome:
    message = f"not switched: {reason}; " + (f"{running} keeps serving" if running else "nothing was started")
    ctx.say("failure", message, target)
    return SwitchOutcome("refused", target, ExitCode.ROLLED_BACK if running else ExitCode.FAILURE, message)


@dataclass(frozen=True)
class SwitchOptions:
    """How one switch goes. `prepared`: the target already resolved (a bench resolves its profiles
    once, so an edit during the run changes nothing of it); `fallback`: the profile to roll back
    to, resolved, which stays the last good profile whatever this switch does (a bench never makes
    its candidate the last good one); `drain`: seconds to let running requests finish before the
    stop (None: [server] drain_timeout, 0: cut them); `verify` False: --no-verify."""

    timeout: float | None = None
    rollback: bool = True
    lock_wait: float | None = None
    force: bool = False
    prepared: Prepared | None = None
    fallback: Prepared | None = None
    drain: float | None = None
    verify: bool = True
    apps_judge: bool = True  # the apps' first answers through the door judge it (False: --apps-may-change)


def refusal_before_stop(ctx: ServeContext, prepared: Prepared, options: SwitchOptions) -> str | None:
    """What the owner's apps need that the target cannot give, known from its command line alone."""
    missing = tool_flags_missing(prepared.spec.argv)
    if options.verify and prepared.verify.tools and missing and not options.force:
        return (
            f"{prepared.profile.name} has no tool calling ({' and '.join(missing)} missing), and [verify] "
            f"tools = true says the apps need it (--force tries it; the verification then decides)"
        )
    return None


def switch(
    ctx: ServeContext,
    target: str,
    *,
    timeout: float | None = None,
    rollback: bool = True,
    lock_wait: float | None = None,
    force: bool = False,
    prepared: Prepared | None = None,
    fallback: Prepared | None = None,
    drain: float | None = None,
    verify: bool = True,
) -> SwitchOutcome:
    """The transaction, each keyword as SwitchOptions says."""
    return switch_with(ctx, target, SwitchOptions(timeout, rollback, lock_wait, force, prepared, fallback, drain, verify))


def switch_with(ctx: ServeContext, target: str, options: SwitchOptions) -> SwitchOutcome:
    began = time.time()
    door = DoorHold(f"the {'bench arm' if options.fallback else 'switch'} to {target}")
    try:
        outcome, drained = _switch(ctx, target, options, began, door)
    finally:
        apps = door.release(ctx, target)
    outcome = _with_apps(outcome, apps)
    _journal(ctx, "bench" if options.fallback else "switch", outcome, drained, began)
    return outcome


def _with_apps(outcome: SwitchOutcome, apps: AppsSeen | None) -> SwitchOutcome:
    if apps is None:
        return outcome
    return dataclasses.replace(outcome, message=f"{outcome.message}\n{apps.describe()}", apps=apps)


def _switch(
    ctx: ServeContext, target: str, options: SwitchOptions, began: float, door: DoorHold
) -> tuple[SwitchOutcome, Drained | None]:
    drained: Drained | None = None
    prepared = options.prepared or prepare(ctx, target)  # ProfileError (exit 2) before anything is touched
    spec = prepared.spec
    settings = prepared.settings
    refusal = preflight.before_lock(ctx, spec)
    reason = refusal.reason if refusal else refusal_before_stop(ctx, prepared, options)
    if reason:
        return _refused(ctx, target, reason, _serving_name()), drained
    with RigLock(f"switch to {target}", ctx.settings.lock_wait if options.lock_wait is None else options.lock_wait):
        running = find_running(ctx.settings, ctx.launcher)  # read under the lock: a queued switch sees now
        for note in running.notes:
            ctx.say("warning", note, target)
        record = running.record
        refusal = preflight.after_lock(ctx, spec, settings, record, options.force)
        if refusal:
            return _refused(ctx, target, refusal.reason, record.profile if record else None), drained
        if record is not None and not prepared.verify.declared:
            for lost in apps_lose(record.argv, spec.argv):
                ctx.say(
                    "warning",
                    f"the apps in front of this rig lose {lost} ({record.profile} had it; [verify] in "
                    f"config.toml makes a switch that drops it fail instead)",
                    target,
                )
        door.hold(ctx, record.profile if record else target)
        stopper = launcher_of(running, ctx.launcher, ctx.settings)
        if record is not None and stopper is not None:
            try:
                drained = drain_before_stop(ctx, record, stopper, options.drain, door)
            except KeyboardInterrupt:
                return _refused(ctx, target, "Ctrl-C while the running requests finished", record.profile), drained
        state = _previous_state(ctx)
        fallback = options.fallback
        last_good = (
            fallback.profile.name if fallback else ((record.profile if record else None) or (state.last_good if state else None))
        )
        try:  # from the state's write on: a Ctrl-C landing just after it must not leave it saying "switching"
            if not _state(ctx, "switching", None, last_good, f"switching to {target}", target, os.getpid()):
                return _refused(ctx, target, "the state file cannot be written", record.profile if record else None), drained
            return _transaction(ctx, prepared, running, last_good, options, door), drained
        except KeyboardInterrupt:
            return _left(ctx, target, last_good, began), drained
        except Exception as exc:  # noqa: BLE001 - a fault of rigctl's own: said, and the state left honest
            message = f"the switch to {target} broke off: {type(exc).__name__}: {exc}; `rigctl status` shows what runs"
            _state(ctx, "failed", None, last_good, message)
            ctx.say("failure", message, target)
            return SwitchOutcome("rollback_failed", target, ExitCode.ROLLBACK_FAILED, message), drained


def _journal(ctx: ServeContext, action: Action, outcome: SwitchOutcome, drained: Drained | None, began: float) -> None:
    """Add the ending to the journal; a journal that cannot be written is said, never raised."""
    verification = outcome.attempt.verification if outcome.attempt else None
    failure = outcome.attempt.failure if outcome.attempt else None
    refused = failure.summary if failure is not None and failure.cause == "apps" else None
    try:
        append_ending(ending_of(action, outcome.status, outcome.target, began, drained, verification, outcome.apps, refused))
    except OSError as exc:
        ctx.say("warning", f"the switch journal could not be written ({exc.strerror or exc}): the exporter's counts lag")


def _serving_name() -> str | None:
    try:
        record = read_record()
    except DamagedFile:
        return None
    return record.profile if record else None


def _transaction(
    ctx: ServeContext,
    prepared: Prepared,
    running: RunningServer,
    last_good: str | None,
    options: SwitchOptions,
    door: DoorHold | None = None,
) -> SwitchOutcome:
    profile, spec = prepared.profile, prepared.spec
    target = profile.name
    record, launcher = running.record, launcher_of(running, ctx.launcher, ctx.settings)
    ctx.interrupt.touched = True
    context_before = booted_context(record.profile if record else None)
    if record and launcher:
        try:
            stop_server(ctx, record, launcher)
        except StopFailed as exc:
            message = f"{target} was not started: {record.profile} could not be stopped: {exc}"
            _state(ctx, "failed", None, last_good, message)
            ctx.say("failure", message, target)
            return SwitchOutcome("rollback_failed", target, ExitCode.ROLLBACK_FAILED, message)
    if ctx.interrupt.requested.is_set():
        attempt = not_started(target, Failure("interrupted", "interrupted by Ctrl-C before it started", ""))
    else:
        attempt = boot(ctx, profile, spec, boot_timeout(ctx, profile, options.timeout), prepared.verify if options.verify else None)
    if attempt.ok and door is not None and options.verify and options.apps_judge:
        attempt = door.judged_by_the_apps(ctx, attempt)
    if attempt.ok:
        message = switched_words(target, attempt, context_before)
        _state(ctx, "serving", target, last_good if options.fallback else target, message)
        ctx.say("outcome", message, target)
        return SwitchOutcome("switched", target, ExitCode.OK, message, attempt)
    failure = attempt.failure
    why = f"{target} failed: {failure.summary if failure else 'unknown'}"
    ctx.say(
        "failure",
        why
        + (f"\n  {failure.line}" if failure and failure.line else "")
        + (f"\n  fix: {failure.suggestion}" if failure and failure.suggestion else ""),
        target,
    )
    if not options.rollback or not last_good or last_good == target:
        reason = (
            "rollback disabled"
            if not options.rollback
            else ("no previous profile to roll back to" if not last_good else "it was the profile that served")
        )
        message = f"{why}; {reason}; nothing serves"
        _state(ctx, "failed", None, last_good, message)
        return SwitchOutcome("failed", target, ExitCode.ROLLBACK_FAILED, message, attempt)
    return _roll_back(ctx, target, why, attempt, last_good, options)


def _roll_back(
    ctx: ServeContext, target: str, why: str, attempt: BootResult, last_good: str, options: SwitchOptions
) -> SwitchOutcome:
    if ctx.interrupt.requested.is_set():
        ctx.say("step", f"Ctrl-C: rolling back to {last_good} (Ctrl-C again to leave at once)", last_good)
    ctx.interrupt.requested.clear()  # the first Ctrl-C was for the new boot, not for the rollback
    ctx.say("step", f"rolling back to {last_good}", last_good)
    try:
        again_prepared = options.fallback or prepare(ctx, last_good)
        previous, previous_spec = again_prepared.profile, again_prepared.spec
    except Exception as exc:  # noqa: BLE001 - the last good profile itself may have become invalid on disk
        message = f"{why}; rollback to {last_good} impossible: {exc}; nothing serves"
        _state(ctx, "failed", None, last_good, message)
        ctx.say("failure", message, last_good)
        return SwitchOutcome("rollback_failed", target, ExitCode.ROLLBACK_FAILED, message, attempt, rollback_profile=last_good)
    refusal = preflight.before_lock(ctx, previous_spec)
    if refusal:
        again = not_started(last_good, Failure("launch", refusal.reason, ""))
    else:
        again = boot(
            ctx,
            previous,
            previous_spec,
            rollback_timeout(ctx, previous),
            again_prepared.verify if options.verify else None,
            verify_decides=False,
        )
    if again.ok:
        message = f"{why}; rolled back: {last_good} serves again"
        _state(ctx, "serving", last_good, last_good, message)
        ctx.say("outcome", message, last_good)
        return SwitchOutcome("rolled_back", target, ExitCode.ROLLED_BACK, message, attempt, again, last_good)
    second = again.failure.summary if again.failure else "unknown"
    message = f"{why}; rollback to {last_good} failed too: {second}; nothing serves"
    _state(ctx, "failed", None, last_good, message)
    ctx.say("failure", message, last_good)
    return SwitchOutcome("rollback_failed", target, ExitCode.ROLLBACK_FAILED, message, attempt, again, last_good)


def _left(ctx: ServeContext, target: str, last_good: str | None, since: float) -> SwitchOutcome:
    """A second Ctrl-C: leave now, and say exactly what is left behind."""
    message = f"left at the second Ctrl-C during the switch to {target}: {left_behind(ctx, since)}"
    _state(ctx, "interrupted", None, last_good, message)
    return SwitchOutcome("interrupted", target, ExitCode.ROLLBACK_FAILED, message)


def start(
    ctx: ServeContext, name: str | None, timeout: float | None = None, drain: float | None = None, verify: bool = True
) -> SwitchOutcome:
    """Boot a profile when nothing serves (default: the last good one)."""
    running = find_running(ctx.settings, ctx.launcher)
    if running.record:
        record = running.record
        message = f"{record.profile} is already running (pid {record.pid}); use switch or restart"
        return SwitchOutcome("refused", name or record.profile, ExitCode.FAILURE, message)
    state = _previous_state(ctx)
    target = name or (state.last_good if state else None)
    if not target:
        return SwitchOutcome("refused", "", ExitCode.BAD_INPUT, "no profile given and none served before")
    return switch(ctx, target, timeout=timeout, rollback=False, drain=drain, verify=verify)


def stop(ctx: ServeContext, drain: float | None = None) -> SwitchOutcome:
    """Stop the server rigctl started, once its running requests have finished (`drain` as for a
    switch)."""
    began = time.time()
    door = DoorHold("rigctl stop")
    try:
        outcome, drained = _stop(ctx, drain, door)
    finally:
        apps = door.release(ctx, "")
    outcome = _with_apps(outcome, apps)
    if outcome.target:  # "nothing was running" is no ending of anything
        _journal(ctx, "stop", outcome, drained, began)
    return outcome


def _stop(ctx: ServeContext, drain: float | None, door: DoorHold) -> tuple[SwitchOutcome, Drained | None]:
    drained: Drained | None = None
    with RigLock("stop", ctx.settings.lock_wait):
        running = find_running(ctx.settings, ctx.launcher)  # under the lock: never a switch's half-state
        for note in running.notes:
            ctx.say("warning", note)
        state = _previous_state(ctx)
        last_good = state.last_good if state else None
        record, launcher = running.record, launcher_of(running, ctx.launcher, ctx.settings)
        if not record or not launcher:
            _state(ctx, "stopped", None, last_good, "nothing was running")
            return SwitchOutcome("stopped", "", ExitCode.OK, "nothing was running"), drained
        door.hold(ctx, record.profile)
        try:
            drained = drain_before_stop(ctx, record, launcher, drain, door)
        except KeyboardInterrupt:
            message = f"not stopped: Ctrl-C while the running requests finished; {record.profile} keeps serving"
            return SwitchOutcome("refused", record.profile, ExitCode.FAILURE, message), drained
        ctx.interrupt.touched = True
        # said before the server goes: a watcher seeing it gone knows rigctl stops it (no "engine died")
        _state(ctx, "stopping", None, last_good or record.profile, f"stopping {record.profile}", owner=os.getpid())
        try:
            stop_server(ctx, record, launcher)
        except StopFailed as exc:
            message = f"{record.profile} could not be stopped: {exc}"
            _state(ctx, "failed", None, last_good or record.profile, message)
            return SwitchOutcome("failed", record.profile, ExitCode.FAILURE, message), drained
        _state(ctx, "stopped", None, last_good or record.profile, f"stopped {record.profile}")
    return SwitchOutcome("stopped", record.profile, ExitCode.OK, f"stopped {record.profile}"), drained
