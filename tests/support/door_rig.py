"""A rig with its front door: the simulated rig of tests/faults, `rigctl gateway` running on the
apps' port, and the profiles `good` and `alt` served behind it."""

from __future__ import annotations

import subprocess

from tests.faults.rig import Rig
from tests.support.serving import LongRequest


class DoorRig(Rig):
    door: subprocess.Popen[str] | None = None

    def open_door(self, *args: str) -> list[str]:
        """`rigctl gateway` on this rig's port (unless `args` say where); the lines it said up to
        its address."""
        listen = () if any(a.startswith("--listen") for a in args) else ("--listen", f"127.0.0.1:{self.port}")
        self.door = self.popen("gateway", *listen, *args)
        return self.wait_for(self.door, "the apps' address")

    def streaming(self, count: int = 1, tokens: int = 2000) -> list[LongRequest]:
        """`good` served slowly behind the door, with `count` long streams through it, each begun."""
        self.env["RIGCTL_SIM_SPEED"] = "0.05"  # a generation of 100 tokens takes seconds
        self.open_door()
        switched = self.rigctl("switch", "good")
        assert switched.returncode == 0, switched.stdout + switched.stderr
        streams = [LongRequest(self.port, tokens) for _ in range(count)]
        for stream in streams:
            stream.start()
        assert all(stream.started.wait(60) for stream in streams)
        return streams

    def close_door(self) -> tuple[int, str]:
        assert self.door is not None
        self.door.terminate()
        code, out = self.finish(self.door)
        self.door = None
        return code, out

    def cleanup(self) -> None:
        if self.door is not None:
            self.door.kill()
            self.door.wait()
        super().cleanup()
