"""The door's side of the control channel (gateway/control.py): a Unix socket server on the
door's event loop, apart from the switch's side so that `rigctl status` and a switch, which only
ask, never load asyncio.

Every answer carries the id of its question, so a client that gave up on one (a timeout) and asks
again never reads the late answer as the new one's.

A hold belongs to the switch that asked for it (its pid and start: the process holding the rig
lock), never to one connection: a switch whose connection timed out reconnects and goes on with
the same hold. A newer switch's hold supersedes an older one (it could take the rig lock, so the
older one's switch is over or gone), and any hold ends at its deadline whatever its holder does.
A holder that dies mid-switch leaves a server that may still be booting: its held requests are
answered 503 with Retry-After, never sent there. What the apps saw of each ended hold is kept for
its token, so a release that comes late or twice still gets it, and `status` says the last one.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rigctl import paths
from rigctl.gateway.apps_seen import AppsSeen
from rigctl.gateway.control import LINE_LIMIT, ControlError, answers
from rigctl.proc import same_process

if TYPE_CHECKING:
    from rigctl.gateway.door import Gateway

WATCH_S = 1.0  # how often a hold's holder and deadline are looked at
DEFAULT_HOLD_S = 3600.0  # a hold that names no deadline
KEEP_ENDED = 16  # ended holds whose record is kept for a late release


@dataclass
class HoldOwner:
    """Who holds the door, and until when."""

    token: str
    label: str  # what holds it: "switch to alt (rigctl pid 4242)"
    pid: int | None  # the switch's process; None: the hold belongs to its connection (an old client)
    start: str | None  # proc.start_id of that pid
    deadline: float  # monotonic
    writer: asyncio.StreamWriter | None = None  # the connection that asked (for a hold without a pid)

    def alive(self) -> bool:
        return self.pid is None or self.pid == os.getpid() or same_process(self.pid, start=self.start)


@dataclass(frozen=True)
class EndedHold:
    label: str
    pid: int | None
    how: str  # "released", "its switch died", "its deadline passed", "superseded by ..."
    apps: AppsSeen

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "pid": self.pid, "how": self.how, "apps": self.apps.to_json()}


class ControlServer:
    def __init__(self, door: Gateway, listen: str) -> None:
        self.door, self.listen = door, listen
        self.owner: HoldOwner | None = None
        self.ended: dict[str, EndedHold] = {}  # by token, the newest last
        self.server: asyncio.AbstractServer | None = None
        self._watch: asyncio.Task[None] | None = None

    async def start(self, path: Path) -> None:
        _make_room(path)
        old = os.umask(0o177)
        try:
            self.server = await asyncio.start_unix_server(self._client, path=str(path), limit=LINE_LIMIT)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        self._watch = asyncio.get_running_loop().create_task(self._watch_holder())

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self.server is not None:
            self.server.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    ask = json.loads(line)
                except ValueError:
                    ask = None
                if not isinstance(ask, dict):
                    answer: dict[str, Any] = {"error": "not a JSON object"}
                else:
                    answer = await self._answer(ask, writer)
                    if "id" in ask:
                        answer["id"] = ask["id"]
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            owner = self.owner
            if owner is not None and owner.pid is None and owner.writer is writer:
                self._end("released (its connection closed)", serving=True)  # a hold of the connection's own
            writer.close()

    async def _answer(self, ask: dict[str, Any], writer: asyncio.StreamWriter) -> dict[str, Any]:
        op = ask.get("op")
        door = self.door
        if op == "status":
            return {"pid": os.getpid(), "listen": self.listen, **door.status(), **self._holds()}
        if op == "hold":
            return self._hold(ask, writer)
        if op == "wait":
            seconds = ask.get("seconds")
            return {"in_flight": await door.wait_idle(float(seconds) if isinstance(seconds, (int, float)) else 0.0)}
        if op == "cut":
            refused = self._not_owner(ask)
            if refused:
                return refused
            why = ask.get("why")
            return {"cut": door.cut(why if isinstance(why, str) and why else "a switch cut it")}
        if op == "release":
            token = ask.get("hold")
            owner = self.owner
            if owner is not None and (token == owner.token or (token is None and owner.writer is writer)):
                window = ask.get("judge_s")
                judged = await self._judge(float(window)) if isinstance(window, (int, float)) and window > 0 else None
                if self.owner is not owner:  # ended meanwhile (its deadline, a newer switch, its holder died)
                    ended = self.ended.get(owner.token)
                    return {"apps": ended.apps.to_json() if ended else {}, "ended": ended.how if ended else "", "judged": judged}
                if judged is not None and judged["refused"]:
                    return {"refused": judged["refused"], "judged": judged}  # the hold goes on: the switch rolls back
                return {"apps": self._end("released", serving=True).apps.to_json(), "judged": judged}
            ended = self.ended.get(token) if isinstance(token, str) else None
            if ended is not None:
                return {"apps": ended.apps.to_json(), "ended": ended.how}
            return {"error": "this switch holds nothing at the door"}
        return {"error": f"unknown op {op!r}"}

    async def _judge(self, window_s: float) -> dict[str, Any] | None:
        """The apps judge the switch (gateway/judge.py): their first answers from the new server,
        awaited up to `window_s`; None when no client of the door's has been answered yet."""
        probation = self.door.begin_probation(window_s)
        if probation is None:
            return None
        try:
            await asyncio.wait_for(probation.done.wait(), window_s)
        except TimeoutError:
            pass
        judged = probation.to_json()
        self.door.end_probation()
        return judged

    def _hold(self, ask: dict[str, Any], writer: asyncio.StreamWriter) -> dict[str, Any]:
        pid, start, label, seconds = ask.get("pid"), ask.get("start"), ask.get("label"), ask.get("deadline_s")
        if pid is not None and (not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0):
            return {"error": "pid: not a process id"}
        superseded = None
        if self.owner is not None:
            superseded = self.owner.label
            self._retire(self.owner, f"superseded by {label or 'a newer switch'}")
        limit = float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds > 0 else None
        self.owner = HoldOwner(
            token=secrets.token_hex(8),
            label=str(label) if isinstance(label, str) and label else f"a switch (pid {pid})",
            pid=pid,
            start=start if isinstance(start, str) else None,
            deadline=time.monotonic() + (limit or DEFAULT_HOLD_S),
            writer=writer if pid is None else None,
        )
        answer: dict[str, Any] = {"hold": self.owner.token, "in_flight": self.door.begin_hold()}
        if superseded:
            answer["superseded"] = superseded
        return answer

    def _not_owner(self, ask: dict[str, Any]) -> dict[str, Any] | None:
        token = ask.get("hold")
        if token is None or (self.owner is not None and token == self.owner.token):
            return None
        ended = self.ended.get(token) if isinstance(token, str) else None
        return {"error": f"this switch's hold ended ({ended.how if ended else 'unknown'}): it cuts nothing now"}

    def _retire(self, owner: HoldOwner, how: str) -> None:
        """An owner whose hold goes on under another: its record says what the apps saw so far."""
        self._keep(owner, EndedHold(owner.label, owner.pid, how, self.door.hold_so_far()))

    def _end(self, how: str, serving: bool) -> EndedHold:
        """The hold ends: its held requests go to what serves (`serving` False: each is answered 503)."""
        owner = self.owner
        assert owner is not None
        self.owner = None
        ended = EndedHold(owner.label, owner.pid, how, self.door.end_hold(serving))
        self._keep(owner, ended)
        return ended

    def _keep(self, owner: HoldOwner, ended: EndedHold) -> None:
        self.ended[owner.token] = ended
        while len(self.ended) > KEEP_ENDED:
            del self.ended[next(iter(self.ended))]

    def _holds(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        owner = self.owner
        if owner is not None:
            out["holder"] = {"label": owner.label, "pid": owner.pid, "left_s": round(owner.deadline - time.monotonic(), 1)}
        if self.ended:
            out["last_hold"] = list(self.ended.values())[-1].to_json()
        return out

    async def _watch_holder(self) -> None:
        """A holder that died, or a hold past its deadline, ends the hold."""
        while True:
            await asyncio.sleep(WATCH_S)
            owner = self.owner
            if owner is None:
                continue
            if not owner.alive():
                # its switch may have left a server booting: the held requests get 503 + Retry-After
                self._end("its switch died", serving=False)
            elif time.monotonic() > owner.deadline:
                self._end("its deadline passed", serving=True)


def _make_room(path: Path) -> None:
    """The socket's place, free: a socket a dead door left is removed; a live door's is refused."""
    paths.ensure_private_dir(path.parent)
    if path.exists() or path.is_symlink():
        if answers(path):
            raise ControlError(f"{path}: a front door already runs on this rig (`rigctl gateway --status`)")
        path.unlink()
