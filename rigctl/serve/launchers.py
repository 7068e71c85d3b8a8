"""The launcher interface and how rigctl picks one (settings, or the simulator with --sim)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Protocol

from rigctl.config import Settings
from rigctl.state.servers import ServerView
from rigctl.state.serving import RunningServer
from rigctl.state.statefiles import ServerRecord

if TYPE_CHECKING:  # the profiles layer is for launching: `rigctl status` needs none of it
    from rigctl.profiles.vllm_args import LaunchSpec

SIM_COMMAND = (sys.executable, "-m", "rigctl.sim.vllm_server")


class Launcher(ServerView, Protocol):
    """A way to start and stop vLLM; what it can tell of a running one is its ServerView's."""

    def check(self, spec: LaunchSpec) -> list[str]:
        """What would make start() fail, decided before the running server is stopped."""
        ...

    def start(self, spec: LaunchSpec, profile: str) -> ServerRecord: ...

    def stop(self, record: ServerRecord, grace: float) -> None:
        """SIGTERM (or the manager's stop), `grace`, then a kill; StopFailed if it outlives that."""
        ...


def make_launcher(settings: Settings, kind: str | None = None, sim: str | None = None) -> Launcher:
    """`sim`: the simulated rig the servers it starts are to simulate (a process launcher only)."""
    kind = kind or settings.launcher
    if kind == "systemd":
        from rigctl.serve.launcher_systemd import SystemdLauncher

        return SystemdLauncher(settings.systemd_unit, settings.systemd_user, settings.systemd_dropin_dir)
    if kind == "docker":
        from rigctl.serve.launcher_docker import DockerLauncher

        return DockerLauncher(settings.docker_image, settings.docker_container, settings.docker_hf_cache)
    from rigctl.serve.launcher_process import ProcessLauncher

    return ProcessLauncher(settings.kill_wait, {"RIGCTL_SIM": sim} if sim else None)


def launcher_for(record: ServerRecord, settings: Settings) -> Launcher:
    """The launcher that started `record` (it may differ from today's settings)."""
    return make_launcher(settings, record.launcher)


def launcher_of(running: RunningServer, own: Launcher, settings: Settings) -> Launcher | None:
    """What stops the running server find_running saw: `own` when it saw it through `own` (a
    process launcher holds the children it started, and reaps them), else the launcher its
    record names; None when nothing runs."""
    if running.record is None or running.view is None:
        return None
    return own if running.view is own else launcher_for(running.record, settings)
