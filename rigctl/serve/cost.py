"""What a switch would cost, before anything happens: `rigctl switch TARGET --dry-run` and the
TUI's switch confirm. Nothing is stopped, started or written: the target is resolved and checked
as the switch would, the pool it would get is predicted (rigctl fit, from the model's config or
rigctl's copy of it, labelled), the active profile's measured pool is read from its last boot
record, the requests running now are read from the engine, and every warning and refusal the
switch would say is said here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigctl.errors import RigctlError
from rigctl.fit.check import predicted_pool
from rigctl.gateway.control import ControlError
from rigctl.profiles.summary import Change, launch_diff
from rigctl.serve import front_door, preflight
from rigctl.serve.context import ServeContext
from rigctl.serve.drain import in_flight
from rigctl.serve.hold_estimate import HoldEstimate, flights_of
from rigctl.serve.steps import Prepared, prepare
from rigctl.serve.switch import SwitchOptions, refusal_before_stop
from rigctl.serve.verify_spec import apps_lose
from rigctl.state import boots
from rigctl.state.serving import find_running


@dataclass(frozen=True)
class SwitchCost:
    target: str
    predicted_pool_tokens: int | None
    predicted_from: str  # the config the prediction read, or why there is none
    active_profile: str | None
    active_pool_tokens: int | None  # measured: the engine's figure in its last boot record
    running_requests: int | None  # None: nothing serves, or the engine does not say
    warnings: tuple[str, ...]
    changes: tuple[Change, ...]
    verification: tuple[str, ...]  # the checks the boot would be held to
    refusal: str | None  # why the switch would be refused before anything stops
    drain_s: float
    apps_wait: HoldEstimate | None = None  # how long the apps will wait (None: not estimated)

    def pool_change(self) -> str:
        """'KV pool 399,584 -> ~42,900 tokens (-89%)': measured on the left, predicted on the right."""
        after = f"~{self.predicted_pool_tokens:,}" if self.predicted_pool_tokens is not None else "n/a"
        before = f"{self.active_pool_tokens:,}" if self.active_pool_tokens is not None else "n/a"
        change = ""
        if self.predicted_pool_tokens is not None and self.active_pool_tokens:
            change = f" ({(self.predicted_pool_tokens - self.active_pool_tokens) / self.active_pool_tokens:+.0%})"
        return f"KV pool {before} -> {after} tokens{change}"

    def lines(self) -> list[str]:
        """The cost in words, as the dry run prints it and the TUI's confirm shows it."""
        out = [self.pool_change() + f"   ({self.active_profile or 'nothing'} measured; {self.target} {self.predicted_from})"]
        if self.apps_wait is not None:
            out += self.apps_wait.lines()
        elif self.running_requests:
            out.append(
                f"{self.running_requests} request(s) running: the switch waits up to {self.drain_s:g} s for them"
                if self.drain_s > 0
                else f"{self.running_requests} request(s) running: cut at the stop"
            )
        elif self.running_requests == 0:
            out.append("no request running")
        if self.changes:
            out.append("changes: " + "; ".join(str(c) for c in self.changes))
        out += [f"warning: {w}" for w in self.warnings]
        out.append("verifies: " + ("; ".join(self.verification) if self.verification else "nothing ([verify])"))
        if self.refusal:
            out.append(f"REFUSED before the stop: {self.refusal}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "predicted_pool_tokens": self.predicted_pool_tokens,
            "predicted_from": self.predicted_from,
            "pool_change": self.pool_change(),
            "active": {"profile": self.active_profile, "pool_tokens": self.active_pool_tokens},
            "running_requests": self.running_requests,
            "warnings": list(self.warnings),
            "argv_diff": [{"what": c.what, "before": c.before, "after": c.after} for c in self.changes],
            "verification": list(self.verification),
            "refused": self.refusal,
            "drain_s": self.drain_s,
            "apps_wait": self.apps_wait.to_json() if self.apps_wait else None,
        }


def _measured_pool(profile: str) -> int | None:
    for record in reversed(boots.read_all()):
        if record.profile == profile and record.kv_tokens is not None:
            return record.kv_tokens
    return None


def switch_cost(ctx: ServeContext, target: str, flags: SwitchOptions | None = None) -> SwitchCost:
    """The cost of `switch(ctx, target, ...)`, touching nothing. ProfileError as the switch would."""
    flags = flags or SwitchOptions()
    prepared = flags.prepared or prepare(ctx, target)
    warnings = list(prepared.warnings)
    running = find_running(ctx.settings, ctx.launcher)
    record = running.record
    active: Prepared | None = None
    if record is not None:
        try:
            active = prepare(ctx, record.profile)
        except RigctlError:
            warnings.append(f"the active profile {record.profile} does not load now: no command-line diff")
        if not prepared.verify.declared:
            warnings += [f"the apps in front of this rig lose {lost}" for lost in apps_lose(record.argv, prepared.spec.argv)]
    refusal = preflight.before_lock(ctx, prepared.spec)
    reason = refusal.reason if refusal else refusal_before_stop(ctx, prepared, flags)
    if reason is None:
        late = preflight.after_lock(ctx, prepared.spec, prepared.settings, record, flags.force)
        reason = late.reason if late else None
    tokens, source = (
        predicted_pool(prepared.checked.flags, tuple(g.memory_total or 0 for g in ctx.rig.gpus) if ctx.rig else ())
        if prepared.checked.flags is not None
        else (None, "no launch")
    )
    running_now = (
        in_flight(record.base_url, running.view.api_key(record)) if record is not None and running.view is not None else None
    )
    drain_s = ctx.settings.drain_timeout if flags.drain is None else flags.drain
    door = front_door.find()
    try:
        detail = door.status().get("in_flight_detail") if door is not None else None
    except ControlError:
        detail = None
    finally:
        if door is not None:
            door.close()
    apps_wait = HoldEstimate(
        prepared.profile.name,
        door is not None,
        flights_of(detail),
        running_now,
        drain_s,
        boots.expected_boot(boots.read_all(), prepared.profile.name),
    )
    return SwitchCost(
        target=prepared.profile.name,
        predicted_pool_tokens=tokens,
        predicted_from=source,
        active_profile=record.profile if record else None,
        active_pool_tokens=_measured_pool(record.profile) if record else None,
        running_requests=running_now,
        warnings=tuple(dict.fromkeys(warnings)),
        changes=tuple(launch_diff(active.spec, prepared.spec)) if active else (),
        verification=tuple(prepared.verify.describe()) if flags.verify else ("nothing (--no-verify)",),
        refusal=reason,
        drain_s=drain_s,
        apps_wait=apps_wait,
    )
