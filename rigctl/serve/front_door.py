"""What the transaction does with the rig's front door (rigctl gateway), when one runs: hold the
apps' new requests before the drain, drain by its exact count of requests in flight (and vLLM's
gauges, for clients that bypass it), cut at the deadline, boot vLLM on an internal port behind it,
and release the held requests to whatever serves at the end. Without a door, nothing here runs
and the switch goes as it always did."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from rigctl.gateway import control
from rigctl.gateway.apps_seen import AppsSeen
from rigctl.gateway.control import ControlError, DoorClient
from rigctl.jsonio import DamagedFile
from rigctl.profiles.vllm_args import LaunchSpec, moved_to
from rigctl.serve.drain import POLL_S, Drained, in_flight
from rigctl.state.statefiles import read_record, record_file


def find() -> DoorClient | None:
    """The rig's front door, connected (None when none runs)."""
    return control.find()


def runs() -> bool:
    return listening() is not None


def listening() -> str | None:
    """The apps' address of the rig's front door (HOST:PORT), when one runs."""
    door = find()
    if door is None:
        return None
    try:
        listen = door.status().get("listen")
    except ControlError:
        return None
    finally:
        door.close()
    return listen if isinstance(listen, str) else None


def internal_port() -> int:
    """A free port on 127.0.0.1 for vLLM behind the door (the kernel's pick: the door learns it
    from the server record, the apps never see it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def behind_door(spec: LaunchSpec) -> tuple[LaunchSpec, str | None]:
    """The launch, moved to an internal port when a front door runs, and the door's address (the
    server record keeps it: while vLLM sits behind the door, the door's death is the rig's);
    unchanged, and None, otherwise."""
    listen = listening()
    return (moved_to(spec, internal_port()), listen) if listen else (spec, None)


@dataclass(frozen=True)
class DoorDrain:
    """The drain through the door: its exact count and vLLM's gauges, side by side."""

    gauges: Drained  # vLLM's view: every client, the door's included
    door_at_start: int  # forwarded through the door and unanswered when the hold began
    door_cut: int  # of those, cut by the door at the deadline


def drain(
    door: DoorClient,
    at_start: int,
    base_url: str,
    api_key: str | None,
    deadline_s: float,
    say: Callable[[str], None],
    why: str,
    clock: Callable[[], float] = time.monotonic,
) -> DoorDrain:
    """Until the door has nothing in flight and vLLM's gauges say nothing runs (a client that
    bypasses the door), at most `deadline_s`; then what is left is cut by the door, each app told
    `why`. A wait the door does not answer in time is no proof it is gone: the drain goes on, asking
    on a new connection, and only a door that takes no connection leaves it to the gauges."""
    start = clock()
    gauges_first = in_flight(base_url, api_key)
    door_left, gauges_left, said, lost, slow_said = at_start, gauges_first, None, False, False
    while clock() - start < deadline_s and (door_left or gauges_left):
        seen = (door_left, gauges_left)
        if seen != said:
            bypass = max(0, (gauges_left or 0) - door_left)
            say(
                f"draining: {door_left} request(s) in flight through the front door"
                + (f", {bypass} more by vLLM's gauges (clients that bypass it)" if bypass else "")
                + f" (up to {deadline_s:g} s; new requests are held)"
            )
            said = seen
        wait = min(POLL_S * 2, max(0.0, deadline_s - (clock() - start)))
        if lost:
            time.sleep(wait)
        else:
            try:
                door_left = door.wait(wait)
            except ControlError as exc:
                if door.reachable():
                    if not slow_said:
                        say(f"the front door was slow to answer ({exc}); it is still there: the drain goes on")
                        slow_said = True
                else:
                    say(f"the front door went away during the drain ({exc}): vLLM's gauges decide the rest")
                    door_left, lost = 0, True
        gauges_now = in_flight(base_url, api_key)
        gauges_left = gauges_now if gauges_now is not None else gauges_left
    cut_count = cut(door, why, say) if door_left and not lost else 0
    seconds = clock() - start
    gauges = Drained(gauges_first or 0, gauges_left or 0, seconds, known=gauges_first is not None)
    return DoorDrain(gauges, at_start, cut_count)


def cut(door: DoorClient, why: str, say: Callable[[str], None]) -> int:
    """The door's answers in flight cut, each app told `why`; asked again on a new connection when
    the first question went unanswered and the door still answers (vLLM must never be stopped
    under the door's streams uncut while the door is there to cut them)."""
    for attempt in (1, 2):
        try:
            return door.cut(why)
        except ControlError as exc:
            if attempt == 2 or not door.reachable():
                say(f"the front door could not be told to cut ({exc}): the stop cuts what runs")
                return 0
    return 0


def release(door: DoorClient | None, say: Callable[[str], None]) -> AppsSeen | None:
    """Release the held requests to what serves now; what the apps saw (None: no door, or it
    could not be asked). A release the door did not answer is asked again on a new connection
    (the door keeps what the apps saw of a hold for its token)."""
    if door is None:
        return None
    try:
        for attempt in (1, 2):
            try:
                return door.release()
            except ControlError as exc:
                if attempt == 2 or not door.reachable():
                    say(f"the front door could not be told to release ({exc}): what the apps saw of this switch is unknown")
                    return None
        return None
    finally:
        door.close()


def served_url() -> Callable[[], str | None]:
    """The door's upstream in rig mode: the server record's address, read again only when the
    file changed (a stat a request)."""
    seen: list[object] = [None, None]

    def resolve() -> str | None:
        try:
            st = os.stat(record_file())
            stamp: object = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            return None
        if stamp != seen[0]:
            try:
                record = read_record()
            except DamagedFile:
                record = None
            seen[0], seen[1] = stamp, record.base_url if record else None
        url = seen[1]
        return url if isinstance(url, str) else None

    return resolve
