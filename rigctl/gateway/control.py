"""The control channel: how a switch (CLI, TUI, the watch service's supervisor, a bench arm) tells
the front door to hold, waits for its drain, cuts, and releases. A Unix socket, mode 0600, in the
state dir: never TCP, so only the owner's own processes reach it. One JSON object a line each way,
each question with an id its answer carries back: a client that gave up waiting for one answer
drops its connection, and the next question goes on a new one, so a late answer is never read as
another's.

A hold belongs to the switch process that asked (gateway/control_server.py): its token goes with
every later question, from whatever connection; the door ends it if that process dies (its held
requests then get 503 + Retry-After), at its deadline, or when a newer switch holds."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigctl import paths
from rigctl.gateway.apps_seen import AppsSeen
from rigctl.proc import start_id

LINE_LIMIT = 64 * 1024


class ControlError(Exception):
    """The door did not answer as it should (it died, or the socket is not a door's)."""


def answers(path: Path) -> bool:
    """Whether a door answers on the socket at `path`."""
    with contextlib.suppress(OSError, ControlError), DoorClient(path, timeout=2.0) as client:
        client.ask({"op": "status"})
        return True
    return False


# -- a switch's side
class DoorClient:
    """A blocking client of the control channel (a switch runs in a thread of its own). A question
    that times out drops the connection (its answer may still come); the next one reconnects."""

    def __init__(self, path: Path, timeout: float = 5.0) -> None:
        self.path = path
        self.timeout = timeout
        self.token: str | None = None  # the hold this switch asked for
        self._next_id = 0
        self._buffer = b""
        self.sock: socket.socket | None = None
        self._connect()

    def _connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.path))
        except OSError:
            sock.close()
            raise
        self.sock, self._buffer = sock, b""

    def __enter__(self) -> DoorClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def ask(self, ask: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """One question and its own answer; ControlError when the door did not give it."""
        self._next_id += 1
        ask_id = self._next_id
        try:
            if self.sock is None:
                self._connect()
            assert self.sock is not None
            self.sock.settimeout(self.timeout if timeout is None else timeout)
            self.sock.sendall(json.dumps({**ask, "id": ask_id}).encode() + b"\n")
            while True:
                answer = self._line()
                if answer.get("id") == ask_id:
                    break  # an answer of an earlier question (one given up on) is dropped
        except OSError as exc:
            self.close()  # its answer may still come: never read on this connection
            raise ControlError(
                f"{self.path}: the front door did not answer ({exc.strerror or exc or type(exc).__name__})"
            ) from None
        except ControlError:
            self.close()
            raise
        if "error" in answer:
            raise ControlError(f"the front door: {answer['error']}")
        return answer

    def _line(self) -> dict[str, Any]:
        assert self.sock is not None
        while b"\n" not in self._buffer:
            data = self.sock.recv(65536)
            if not data:
                raise ControlError(f"{self.path}: the front door closed the control channel")
            self._buffer += data
            if len(self._buffer) > LINE_LIMIT:
                raise ControlError(f"{self.path}: not a front door's answer")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            answer = json.loads(line)
        except ValueError:
            raise ControlError(f"{self.path}: not a front door's answer") from None
        if not isinstance(answer, dict):
            raise ControlError(f"{self.path}: not a front door's answer")
        return answer

    def reachable(self) -> bool:
        """Whether a door still listens on the socket (a new connection is taken). A question that
        went unanswered says only that the door was slow (a loaded machine, a stopped process):
        the door is gone when nothing takes a connection."""
        self.close()
        try:
            self._connect()
            return True
        except OSError:
            return False

    def status(self) -> dict[str, Any]:
        return self.ask({"op": "status"})

    def hold(self, label: str = "", deadline_s: float | None = None) -> int:
        """Hold for this process (the door ends it if the process dies, or at `deadline_s`); the
        count in flight, the drain."""
        pid = os.getpid()
        ask: dict[str, Any] = {"op": "hold", "pid": pid, "start": start_id(pid), "label": label or f"rigctl pid {pid}"}
        if deadline_s is not None:
            ask["deadline_s"] = deadline_s
        answer = self.ask(ask)
        token = answer.get("hold")
        if not isinstance(token, str):
            raise ControlError(f"{self.path}: not a front door's answer (no hold)")
        self.token = token
        return _count(answer, "in_flight")

    def wait(self, seconds: float) -> int:
        return _count(self.ask({"op": "wait", "seconds": seconds}, timeout=seconds + 5.0), "in_flight")

    def cut(self, why: str = "") -> int:
        return _count(self.ask({"op": "cut", "hold": self.token, "why": why}), "cut")

    def release(self) -> AppsSeen:
        """Release this switch's hold; what the apps saw of it (also when the door had ended it:
        its deadline, its supersession, a release asked twice)."""
        return _apps_seen(self.ask({"op": "release", "hold": self.token}), self.path)

    def judged_release(self, window_s: float) -> Judged | None:
        """Release as the apps judge it (gateway/judge.py): each client's first request goes alone
        to the new server, its status line read before the app gets a byte, awaited up to
        `window_s`. None: no client of the door's to judge by (the hold is released). On a
        refusal the hold goes on, the refused requests back in it, for the switch to roll back
        and release; otherwise it is released."""
        answer = self.ask({"op": "release", "hold": self.token, "judge_s": window_s}, timeout=window_s + 10.0)
        judged = answer.get("judged")
        if not isinstance(judged, dict):
            return None
        refused = judged.get("refused")

        def names(key: str) -> tuple[str, ...]:
            value = judged.get(key)
            return tuple(str(v) for v in value) if isinstance(value, list) else ()

        return Judged(
            refused=tuple(r for r in refused if isinstance(r, dict)) if isinstance(refused, list) else (),
            accepted=names("accepted"),
            unanswered=names("unanswered"),
        )


@dataclass(frozen=True)
class Judged:
    """How the apps judged a switch: the clients refused (status, message, withheld), those answered
    as before, and those that sent nothing within the window."""

    refused: tuple[dict[str, Any], ...]
    accepted: tuple[str, ...]
    unanswered: tuple[str, ...]


@dataclass(frozen=True)
class EndedHoldSeen:
    """A hold the door ended: who held it, how it ended, what its apps saw."""

    label: str
    pid: int | None
    how: str
    apps: AppsSeen


def _ended_hold(raw: object) -> EndedHoldSeen | None:
    if not isinstance(raw, dict):
        return None
    label, pid, how, apps = raw.get("label"), raw.get("pid"), raw.get("how"), raw.get("apps")
    if not (isinstance(label, str) and isinstance(how, str) and isinstance(apps, dict)):
        return None
    try:
        seen = AppsSeen(**{k: v for k, v in apps.items() if k in AppsSeen.__dataclass_fields__})
    except TypeError:
        return None
    return EndedHoldSeen(label, pid if isinstance(pid, int) else None, how, seen)


@dataclass(frozen=True)
class DoorSeen:
    """The front door as a read of the rig sees it: where the apps connect, and its requests now."""

    pid: int
    listen: str
    in_flight: int
    held: int
    holding: bool
    by_client: tuple[tuple[str, int], ...] = ()  # in flight, per client (the User-Agent's product), most first
    holder: str | None = None  # what holds it now ("the switch to alt (rigctl pid 4242)")
    last_hold: EndedHoldSeen | None = None  # how the last hold ended, and what its apps saw

    def brief(self) -> str:
        held = f", {self.held} held" if self.holding or self.held else ""
        named = [f"{name} {n}" for name, n in self.by_client[:3]]
        more = " ..." if len(self.by_client) > 3 else ""
        clients = f" ({', '.join(named)}{more})" if named and (len(named) > 1 or named[0].split()[0] != "unnamed") else ""
        return f"front door {self.listen}: {self.in_flight} in flight{clients}{held}"

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def seen(path: Path | None = None, timeout_s: float = 1.0) -> DoorSeen | None:
    """The rig's front door now (None: none runs, or it did not answer within timeout_s)."""
    path = path or paths.gateway_socket()
    if not path.exists():
        return None
    try:
        with DoorClient(path) as client:
            status = client.ask({"op": "status"}, timeout=timeout_s)
    except (OSError, ControlError):
        return None
    fields = (status.get("pid"), status.get("listen"), status.get("in_flight"), status.get("held"), status.get("holding"))
    pid, listen, in_flight, held, holding = fields
    if not (isinstance(pid, int) and isinstance(listen, str) and isinstance(in_flight, int) and isinstance(held, int)):
        return None
    raw = status.get("in_flight_by_client")
    clients = {str(k): v for k, v in raw.items() if isinstance(v, int)} if isinstance(raw, dict) else {}
    by_client = tuple(sorted(clients.items(), key=lambda kv: (-kv[1], kv[0])))
    holder = status.get("holder")
    label = holder.get("label") if isinstance(holder, dict) else None
    last = _ended_hold(status.get("last_hold"))
    return DoorSeen(pid, listen, in_flight, held, bool(holding), by_client, label if isinstance(label, str) else None, last)


def _apps_seen(answer: dict[str, Any], path: Path) -> AppsSeen:
    seen = answer.get("apps")
    if not isinstance(seen, dict):
        raise ControlError(f"{path}: not a front door's answer")
    try:
        return AppsSeen(**{k: v for k, v in seen.items() if k in AppsSeen.__dataclass_fields__})
    except TypeError:
        raise ControlError(f"{path}: not a front door's answer") from None


def _count(answer: dict[str, Any], key: str) -> int:
    value = answer.get(key)
    if not isinstance(value, int):
        raise ControlError(f"not a front door's answer (no {key})")
    return value


def find(path: Path | None = None) -> DoorClient | None:
    """The rig's front door, connected, when one runs (None: no door; the switch goes as before)."""
    path = path or paths.gateway_socket()
    if not path.exists():
        return None
    try:
        client = DoorClient(path)
    except OSError:
        return None
    try:
        client.status()
    except ControlError:
        client.close()
        return None
    return client
