"""The switch transaction (see DESIGN.md):

validate -> preflight (GPUs, port, foreign VRAM) -> rig lock -> stop -> start -> follow the
boot until really ready -> record. On failure: classify the cause from the log, stop what
is left, start the last good profile again and wait until it is ready, report both.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from rigctl.errors import ExitCode
from rigctl.profiles.validate import gpus_needed, resolve_settings
from rigctl.serve.bootwatch import BootResult
from rigctl.serve.control import (
    ServeContext,
    boot,
    boot_timeout,
    foreign_vram,
    port_holder,
    prepare,
    running_server,
    stop_server,
)
from rigctl.serve.lock import RigLock
from rigctl.serve.state import ActiveState, read_state, write_state


@dataclass(frozen=True)
class SwitchOutcome:
    status: str  # switched | rolled_back | rollback_failed | failed | refused
    target: str
    exit_code: ExitCode
    message: str
    attempt: BootResult | None = None
    rollback: BootResult | None = None
    rollback_profile: str | None = None


def _state(status: str, profile: str | None, last_good: str | None, detail: str = "", target: str | None = None,
           owner: int | None = None) -> None:
    write_state(ActiveState(profile=profile, last_good=last_good, status=status, since=time.time(), detail=detail,
                            target=target, owner_pid=owner))


def switch(ctx: ServeContext, target: str, *, timeout: float | None = None, rollback: bool = True,
           lock_wait: float | None = None) -> SwitchOutcome:
    profile, spec = prepare(ctx, target)  # ProfileError (exit 2) before anything is touched
    settings, _ = resolve_settings(profile, ctx.table)
    record, launcher = running_server(ctx)
    if not (record and record.port == spec.port):
        holder = port_holder(spec.host, spec.port)
        if holder:
            message = (f"not switched: port {spec.port} is held by {holder}; "
                       + (f"{record.profile} keeps serving" if record else "nothing was started"))
            ctx.say("failure", message, target)
            return SwitchOutcome("refused", target, ExitCode.ROLLED_BACK if record else ExitCode.FAILURE, message)
    for note in foreign_vram(ctx, gpus_needed(settings)):
        ctx.say("warning", note, target)
    with RigLock(f"switch to {target}", ctx.settings.lock_wait if lock_wait is None else lock_wait):
        state = read_state()
        last_good = (record.profile if record else None) or (state.last_good if state else None)
        _state("switching", None, last_good, f"switching to {target}", target, os.getpid())
        if record and launcher:
            stop_server(ctx, record, launcher)
        attempt = boot(ctx, profile, spec, boot_timeout(ctx, profile, timeout))
        if attempt.ok:
            _state("serving", target, target, f"switched to {target} in {attempt.seconds:.1f} s")
            message = f"switched to {target} in {attempt.seconds:.1f} s" + _pool(attempt)
            ctx.say("outcome", message, target)
            return SwitchOutcome("switched", target, ExitCode.OK, message, attempt)
        failure = attempt.failure
        why = f"{target} failed: {failure.summary if failure else 'unknown'}"
        ctx.say("failure", why + (f"\n  {failure.line}" if failure and failure.line else ""), target)
        if not rollback or not last_good or last_good == target:
            reason = "rollback disabled" if not rollback else "no previous profile to roll back to"
            _state("failed", None, last_good, f"{why}; {reason}")
            return SwitchOutcome("failed", target, ExitCode.ROLLBACK_FAILED, f"{why}; {reason}; nothing serves",
                                 attempt)
        ctx.say("step", f"rolling back to {last_good}", last_good)
        try:
            previous, previous_spec = prepare(ctx, last_good)
            again = boot(ctx, previous, previous_spec, boot_timeout(ctx, previous, timeout))
        except Exception as exc:  # the last good profile itself may have become invalid on disk
            _state("failed", None, last_good, f"{why}; rollback to {last_good} impossible: {exc}")
            return SwitchOutcome("rollback_failed", target, ExitCode.ROLLBACK_FAILED,
                                 f"{why}; rollback to {last_good} impossible: {exc}", attempt,
                                 rollback_profile=last_good)
        if again.ok:
            message = f"{why}; rolled back: {last_good} serves again"
            _state("serving", last_good, last_good, message)
            ctx.say("outcome", message, last_good)
            return SwitchOutcome("rolled_back", target, ExitCode.ROLLED_BACK, message, attempt, again, last_good)
        second = again.failure.summary if again.failure else "unknown"
        message = f"{why}; rollback to {last_good} failed too: {second}; nothing serves"
        _state("failed", None, last_good, message)
        ctx.say("failure", message, last_good)
        return SwitchOutcome("rollback_failed", target, ExitCode.ROLLBACK_FAILED, message, attempt, again, last_good)


def _pool(result: BootResult) -> str:
    report = result.report
    if report.pool_tokens is None:
        return ""
    at = f" at {report.concurrency_len:,}" if report.concurrency_len else ""
    return f"; KV capacity{at}: {report.pool_tokens:,} tokens ({report.max_concurrency or 0:.2f}x)"


def start(ctx: ServeContext, name: str | None, timeout: float | None = None) -> SwitchOutcome:
    """Boot a profile when nothing serves (default: the last good one)."""
    record, _ = running_server(ctx)
    if record:
        message = f"{record.profile} is already running (pid {record.pid}); use switch or restart"
        return SwitchOutcome("refused", name or record.profile, ExitCode.FAILURE, message)
    state = read_state()
    target = name or (state.last_good if state else None)
    if not target:
        return SwitchOutcome("refused", "", ExitCode.BAD_INPUT, "no profile given and none served before")
    return switch(ctx, target, timeout=timeout, rollback=False)


def stop(ctx: ServeContext) -> SwitchOutcome:
    record, launcher = running_server(ctx)
    state = read_state()
    last_good = state.last_good if state else None
    if not record or not launcher:
        _state("stopped", None, last_good, "nothing was running")
        return SwitchOutcome("stopped", "", ExitCode.OK, "nothing was running")
    with RigLock(f"stop {record.profile}", ctx.settings.lock_wait):
        stop_server(ctx, record, launcher)
        _state("stopped", None, last_good or record.profile, f"stopped {record.profile}")
    return SwitchOutcome("stopped", record.profile, ExitCode.OK, f"stopped {record.profile}")
