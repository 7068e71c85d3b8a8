"""The door's side of the control channel (gateway/control.py): a Unix socket server on the
door's event loop, apart from the switch's side so that `rigctl status` and a switch, which only
ask, never load asyncio."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rigctl import paths
from rigctl.gateway.control import LINE_LIMIT, ControlError, answers

if TYPE_CHECKING:
    from rigctl.gateway.door import Gateway


class ControlServer:
    def __init__(self, door: Gateway, listen: str) -> None:
        self.door, self.listen = door, listen
        self.holder: asyncio.StreamWriter | None = None
        self.server: asyncio.AbstractServer | None = None

    async def start(self, path: Path) -> None:
        _make_room(path)
        old = os.umask(0o177)
        try:
            self.server = await asyncio.start_unix_server(self._client, path=str(path), limit=LINE_LIMIT)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    ask = json.loads(line)
                    answer = await self._answer(ask if isinstance(ask, dict) else {}, writer)
                except ValueError:
                    answer = {"error": "not a JSON object"}
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            if self.holder is writer:  # its switch is gone mid-hold: release to what serves now
                self.holder = None
                self.door.end_hold()
            writer.close()

    async def _answer(self, ask: dict[str, Any], writer: asyncio.StreamWriter) -> dict[str, Any]:
        op = ask.get("op")
        door = self.door
        if op == "status":
            return {"pid": os.getpid(), "listen": self.listen, **door.status()}
        if op == "hold":
            if self.holder is not None and self.holder is not writer:
                return {"error": "another switch holds the door"}
            self.holder = writer
            return {"in_flight": door.begin_hold()}
        if op == "wait":
            seconds = ask.get("seconds")
            return {"in_flight": await door.wait_idle(float(seconds) if isinstance(seconds, (int, float)) else 0.0)}
        if op == "cut":
            return {"cut": door.cut()}
        if op == "release":
            if self.holder is not writer:
                return {"error": "this connection holds nothing"}
            self.holder = None
            return {"apps": door.end_hold().to_json()}
        return {"error": f"unknown op {op!r}"}


def _make_room(path: Path) -> None:
    """The socket's place, free: a socket a dead door left is removed; a live door's is refused."""
    paths.ensure_private_dir(path.parent)
    if path.exists() or path.is_symlink():
        if answers(path):
            raise ControlError(f"{path}: a front door already runs on this rig (`rigctl gateway --status`)")
        path.unlink()
