"""The control channel: how a switch (CLI, TUI, the watch service's supervisor, a bench arm) tells
the front door to hold, waits for its drain, cuts, and releases. A Unix socket, mode 0600, in the
state dir: never TCP, so only the owner's own processes reach it. One JSON object a line each way.

A hold belongs to the connection that asked for it: if that process dies mid-switch (a SIGKILL, a
lost SSH session), the door releases its held requests to whatever serves then, rather than
holding them to their deadline."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigctl import paths
from rigctl.gateway.apps_seen import AppsSeen

LINE_LIMIT = 64 * 1024


def socket_path() -> Path:
    return paths.state_dir() / "gateway.sock"


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
    """A blocking client of the control channel (a switch runs in a thread of its own)."""

    def __init__(self, path: Path, timeout: float = 5.0) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(str(path))
        except OSError:
            self.sock.close()
            raise
        self._buffer = b""

    def __enter__(self) -> DoorClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def ask(self, ask: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        if timeout is not None:
            self.sock.settimeout(timeout)
        try:
            self.sock.sendall(json.dumps(ask).encode() + b"\n")
            while b"\n" not in self._buffer:
                data = self.sock.recv(65536)
                if not data:
                    raise ControlError(f"{self.path}: the front door closed the control channel")
                self._buffer += data
                if len(self._buffer) > LINE_LIMIT:
                    raise ControlError(f"{self.path}: not a front door's answer")
        except OSError as exc:
            raise ControlError(f"{self.path}: the front door did not answer ({exc.strerror or exc})") from None
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            answer = json.loads(line)
        except ValueError:
            raise ControlError(f"{self.path}: not a front door's answer") from None
        if not isinstance(answer, dict):
            raise ControlError(f"{self.path}: not a front door's answer")
        if "error" in answer:
            raise ControlError(f"the front door: {answer['error']}")
        return answer

    def status(self) -> dict[str, Any]:
        return self.ask({"op": "status"})

    def hold(self) -> int:
        return _count(self.ask({"op": "hold"}), "in_flight")

    def wait(self, seconds: float) -> int:
        return _count(self.ask({"op": "wait", "seconds": seconds}, timeout=seconds + 5.0), "in_flight")

    def cut(self) -> int:
        return _count(self.ask({"op": "cut"}), "cut")

    def release(self) -> AppsSeen:
        seen = self.ask({"op": "release"}).get("apps")
        if not isinstance(seen, dict):
            raise ControlError(f"{self.path}: not a front door's answer")
        try:
            return AppsSeen(**{k: v for k, v in seen.items() if k in AppsSeen.__dataclass_fields__})
        except TypeError:
            raise ControlError(f"{self.path}: not a front door's answer") from None


@dataclass(frozen=True)
class DoorSeen:
    """The front door as a read of the rig sees it: where the apps connect, and its requests now."""

    pid: int
    listen: str
    in_flight: int
    held: int
    holding: bool
    by_client: tuple[tuple[str, int], ...] = ()  # in flight, per client (the User-Agent's product), most first

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
    path = path or socket_path()
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
    return DoorSeen(pid, listen, in_flight, held, bool(holding), by_client)


def _count(answer: dict[str, Any], key: str) -> int:
    value = answer.get(key)
    if not isinstance(value, int):
        raise ControlError(f"not a front door's answer (no {key})")
    return value


def find(path: Path | None = None) -> DoorClient | None:
    """The rig's front door, connected, when one runs (None: no door; the switch goes as before)."""
    path = path or socket_path()
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
