"""The drain before a stop, with or without the rig's front door: what runs on the server is let
finish (none of it, with --no-drain), counted exactly by the door when one runs and by vLLM's
gauges always; and the door's hold across the whole transaction."""

from __future__ import annotations

import dataclasses
import os

from rigctl.errors import StopFailed
from rigctl.gateway.apps_seen import AppsSeen
from rigctl.gateway.control import ControlError, DoorClient
from rigctl.gateway.judge import describe_refusals
from rigctl.serve import front_door
from rigctl.serve.bootwatch import BootResult
from rigctl.serve.context import ServeContext
from rigctl.serve.drain import Drained, in_flight
from rigctl.serve.drain import drain as drain_requests
from rigctl.serve.launchers import Launcher
from rigctl.serve.steps import stop_server
from rigctl.state.statefiles import ServerRecord
from rigctl.vllm.bootlog import Failure


class DoorHold:
    """The front door through one transaction: held from before the drain to the end, whatever
    the end is (a switch, a rollback, a failure, a refusal under the lock, Ctrl-C); released to
    what serves then. Its channel closing (this process killed) releases it too."""

    def __init__(self, action: str) -> None:
        """`action`: what holds, as the apps' cut streams and `gateway --status` name it ("the switch to alt")."""
        self.action = action
        self.client: DoorClient | None = None
        self.in_flight = 0
        self.drain: front_door.DoorDrain | None = None

    def hold(self, ctx: ServeContext, profile: str | None) -> None:
        client = front_door.find()
        if client is None:
            return
        try:
            self.in_flight = client.hold(f"{self.action} (rigctl pid {os.getpid()})", hold_deadline(ctx))
        except ControlError as exc:
            client.close()
            ctx.say("warning", f"the front door could not be told to hold ({exc}): the apps may see the switch", profile)
            return
        self.client = client
        ctx.say("phase", f"the front door holds new requests ({self.in_flight} in flight through it)", profile)

    def cut(self) -> int:
        """The door's requests in flight, cut now (--no-drain); 0 when there is no door or it is gone."""
        if self.client is None:
            return 0
        return front_door.cut(self.client, f"cut by {self.action} (--no-drain)", lambda text: None)

    def judged_by_the_apps(self, ctx: ServeContext, attempt: BootResult) -> BootResult:
        """The new server verified, the apps' own first answers judge it ([verify] apps_s; the
        door's gateway/judge.py): a status their client never got before fails the boot as a
        failed verification does. The new server's answers to the clients it served as before run
        to their end (the drain's deadline), then it stops, and the switch rolls back; the refused
        requests wait in the hold for the restored profile."""
        client, record, window = self.client, attempt.record, ctx.settings.verify_apps_s
        if client is None or record is None or window <= 0:
            return attempt
        target = attempt.profile
        ctx.say("phase", f"the apps judge {target}: each client's first request goes alone (up to {window:g} s)", target)
        try:
            judged = client.judged_release(window)
        except ControlError as exc:
            ctx.say("warning", f"the front door could not let the apps judge the switch ({exc})", target)
            return attempt
        if judged is None:
            ctx.say("phase", "no app has been answered through the front door yet: nothing to judge by", target)
            return attempt
        if not judged.refused:
            unanswered = f"; {len(judged.unanswered)} sent nothing within {window:g} s" if judged.unanswered else ""
            ctx.say("phase", f"the apps judged it: {len(judged.accepted)} client(s) answered as before{unanswered}", target)
            return attempt
        summary = describe_refusals(list(judged.refused))
        try:
            left = client.wait(ctx.settings.drain_timeout)  # what the new server answers as before ends first
            if left:
                front_door.cut(
                    client, f"cut by {self.action}: the apps' requests were refused, the switch rolls back", lambda t: None
                )
        except ControlError:
            pass
        try:
            stop_server(ctx, record, ctx.launcher)
        except StopFailed as exc:
            ctx.say("warning", f"{target} could not be stopped after the apps refused it: {exc}", target)
        failure = Failure(
            "apps",
            summary,
            "",
            "the change is meant (a key rotation, a new served name, a shorter context)? switch with --apps-may-change",
        )
        return dataclasses.replace(attempt, ok=False, failure=failure)

    def release(self, ctx: ServeContext, target: str) -> AppsSeen | None:
        client, self.client = self.client, None
        seen = front_door.release(client, lambda text: ctx.say("warning", text, target))
        if seen is not None and self.drain is not None:
            # the door counted its own; vLLM's gauges saw the clients that bypass it
            bypass_cut = max(0, self.drain.gauges.left - self.drain.door_cut) if self.drain.gauges.known else 0
            seen = dataclasses.replace(seen, bypass_cut=bypass_cut)
        return seen


def hold_deadline(ctx: ServeContext) -> float:
    """How long a transaction may hold the door at most: its drain, a stop, a boot and its
    verification, and a rollback's; the door ends the hold then whatever its holder does."""
    settings = ctx.settings
    return (
        settings.drain_timeout + settings.stop_grace + settings.kill_wait + 2.5 * (settings.boot_timeout + settings.verify_timeout)
    )


def drain_before_stop(
    ctx: ServeContext, record: ServerRecord, launcher: Launcher, seconds: float | None, door: DoorHold
) -> Drained:
    """Let what runs on the server finish before it stops (none of it, with --no-drain): what
    vLLM's gauges saw running and cut, for the journal; through a front door, its exact count too."""
    deadline = ctx.settings.drain_timeout if seconds is None else seconds
    api_key = launcher.api_key(record)
    if deadline <= 0:
        left = in_flight(record.base_url, api_key)
        cut = door.cut()
        if left or cut:
            ctx.say(
                "warning",
                f"--no-drain: {max(left or 0, cut)} request(s) running or waiting on {record.profile} are cut",
                record.profile,
            )
        door.drain = front_door.DoorDrain(Drained(left or 0, left or 0, 0.0, known=left is not None), door.in_flight, cut)
        return door.drain.gauges
    ctx.say("step", f"letting the requests on {record.profile} finish (up to {deadline:g} s)", record.profile)
    say = lambda text: ctx.say("phase", text, record.profile)  # noqa: E731 - one line, used twice
    if door.client is not None:
        why = f"cut by {door.action}: the drain's {deadline:g} s deadline passed"
        door.drain = front_door.drain(door.client, door.in_flight, record.base_url, api_key, deadline, say, why)
        done = door.drain.gauges
        if door.drain.door_cut:
            ctx.say(
                "warning",
                f"{door.drain.door_cut} request(s) through the front door still running after {deadline:g} s: cut",
                record.profile,
            )
        elif door.in_flight:
            ctx.say("phase", f"nothing in flight through the front door ({door.in_flight} request(s) were)", record.profile)
        bypass = max(0, done.left - door.drain.door_cut)
        if bypass:
            ctx.say("warning", f"{bypass} request(s) of clients that bypass the front door still running: cut", record.profile)
        return done
    done = drain_requests(record.base_url, api_key, deadline, say)
    ctx.say("warning" if done.left else "phase", done.describe(), record.profile)
    return done
