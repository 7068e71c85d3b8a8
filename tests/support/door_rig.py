"""A rig with its front door: the simulated rig of tests/faults, `rigctl gateway` running on the
apps' port, and the profiles `good` and `alt` served behind it."""

from __future__ import annotations

import subprocess

from tests.faults.rig import Rig


class DoorRig(Rig):
    door: subprocess.Popen[str] | None = None

    def open_door(self, *args: str) -> list[str]:
        """`rigctl gateway` on this rig's port (unless `args` say where); the lines it said up to
        its address."""
        listen = () if any(a.startswith("--listen") for a in args) else ("--listen", f"127.0.0.1:{self.port}")
        self.door = self.popen("gateway", *listen, *args)
        return self.wait_for(self.door, "the apps' address")

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
