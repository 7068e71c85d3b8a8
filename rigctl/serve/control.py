"""The steps a switch is made of: find the running server, stop it, boot a profile, record it.

`ServeContext` carries everything a step needs, so the CLI, the TUI and the tests drive
the same code with their own launcher, rig and event sink.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil

from rigctl.config import Settings
from rigctl.gpu.model import RigInfo
from rigctl.gpu.sampler import RigSampler
from rigctl.profiles.options import OptionTable
from rigctl.profiles.schema import Profile, ProfileError
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.validate import validate
from rigctl.profiles.vllm_args import LaunchSpec, render
from rigctl.serve import history
from rigctl.serve.bootwatch import BootResult, Event, watch_boot
from rigctl.serve.launchers import Launcher, launcher_for
from rigctl.serve.record import ServerRecord, clear_record, read_record, write_record


@dataclass
class ServeContext:
    settings: Settings
    launcher: Launcher
    store: ProfileStore
    table: OptionTable
    rig: RigInfo | None
    vllm_command: tuple[str, ...]
    sampler: RigSampler | None = None
    on_event: Callable[[Event], None] = field(default=lambda event: None)

    def say(self, kind: str, text: str, profile: str | None = None) -> None:
        self.on_event(Event(kind, text, profile))


def prepare(ctx: ServeContext, name: str) -> tuple[Profile, LaunchSpec]:
    """Load, validate (against the rig) and render; ProfileError touches nothing."""
    profile = ctx.store.load(name)
    diagnostics = validate(profile, ctx.table, ctx.rig)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise ProfileError(errors)
    for warning in diagnostics:
        ctx.say("warning", str(warning), profile.name)
    return profile, render(profile, ctx.table, ctx.vllm_command)


def running_server(ctx: ServeContext) -> tuple[ServerRecord | None, Launcher | None]:
    record = read_record()
    if record is None:
        return None, None
    launcher = ctx.launcher if record.launcher == ctx.launcher.name else launcher_for(record, ctx.settings)
    return (record, launcher) if launcher.alive(record) else (None, None)


def port_holder(host: str, port: int) -> str | None:
    """Who listens on the port, if anyone: 'pid 123 (python3)' when it can be told."""
    target = "127.0.0.1" if host in ("", "0.0.0.0") else host
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        if probe.connect_ex((target, port)) != 0:
            return None
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                return f"pid {conn.pid} ({psutil.Process(conn.pid).name()})"
    except (psutil.Error, PermissionError):
        pass
    return "another process"


def foreign_vram(ctx: ServeContext, gpus_needed: int) -> list[str]:
    """VRAM on the GPUs the profile will use held by processes other than vLLM."""
    if ctx.sampler is None:
        return []
    snapshot = ctx.sampler.snapshot()
    notes = []
    for sample in snapshot.samples[:gpus_needed]:
        held = [p for p in sample.processes or () if not p.is_vllm and (p.used_memory or 0) > 0]
        if held:
            mib = sum(p.used_memory or 0 for p in held) / 2**20
            who = ", ".join(f"{p.name or p.pid}" for p in held[:3])
            notes.append(f"GPU{sample.index}: {mib:,.0f} MiB held by {who}; it counts against gpu_memory_utilization")
    return notes


def stop_server(ctx: ServeContext, record: ServerRecord, launcher: Launcher) -> None:
    ctx.say("step", f"stopping {record.profile} (grace {ctx.settings.stop_grace:.0f} s)", record.profile)
    launcher.stop(record, ctx.settings.stop_grace)
    clear_record()
    _wait_vram_released(ctx, record)


def _wait_vram_released(ctx: ServeContext, record: ServerRecord, limit: float = 15.0) -> None:
    """The driver frees memory a moment after the process is gone; the next boot needs it."""
    if ctx.sampler is None or record.pid is None:
        return
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        pids = {p.pid for s in ctx.sampler.snapshot().samples for p in s.processes or ()}
        if record.pid not in pids:
            return
        time.sleep(0.1)


def boot(ctx: ServeContext, profile: Profile, spec: LaunchSpec, timeout: float) -> BootResult:
    ctx.say("step", f"starting {profile.name}", profile.name)
    ctx.say("command", spec.display(), profile.name)
    record = ctx.launcher.start(spec, profile.name)
    write_record(record)  # before watching: a killed rigctl still leaves the server adoptable
    result = watch_boot(ctx.launcher, record, timeout, ctx.on_event)
    if result.ok:
        report = result.report
        history.append(history.BootRecord(
            profile=profile.name, profile_hash=history.profile_hash(profile), when=time.time(),
            argv=spec.redacted_argv(), vllm_version=result.version or report.version,
            rig=ctx.rig.backend if ctx.rig else None, kv_tokens=report.pool_tokens,
            max_concurrency=report.max_concurrency, max_model_len=report.concurrency_len,
            available_kv_gib=report.available_kv_gib, model_load_gib=report.model_load_gib,
            model_load_seconds=report.model_load_seconds, graph_capture_seconds=report.graph_capture_seconds,
            boot_seconds=round(result.seconds, 2)))
    else:
        ctx.launcher.stop(record, min(ctx.settings.stop_grace, 10.0))  # nothing half-started stays behind
        clear_record()
    return result


def boot_timeout(ctx: ServeContext, profile: Profile, override: float | None) -> float:
    if override is not None:
        return override
    value = profile.rigctl.get("boot_timeout")
    return float(value) if isinstance(value, (int, float)) else ctx.settings.boot_timeout


def owner_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    if pid == os.getpid():
        return True
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
