"""What is refused before the running server stops: everything that can be known first.

A switch that would fail for a reason visible now (a vLLM executable that is gone, a
read-only or full state dir, a port another program holds, GPU memory another process
holds beyond what vLLM's start-up check allows) is refused while the working server
still serves, with the cause in one line.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from rigctl import paths
from rigctl.files import own_path_problem
from rigctl.gpu.model import GpuProcess, GpuSample
from rigctl.profiles.settings import Setting, gpus_needed
from rigctl.profiles.vllm_args import LaunchSpec
from rigctl.serve import front_door
from rigctl.serve.context import ServeContext
from rigctl.state import discover
from rigctl.state.statefiles import ServerRecord
from rigctl.units import GIB
from rigctl.vllm.flags import default_gpu_memory_utilization


@dataclass(frozen=True)
class Refusal:
    reason: str


def before_lock(ctx: ServeContext, spec: LaunchSpec) -> Refusal | None:
    """Checks that need neither the lock nor the running server (the lock itself lives in the
    state dir, so an unwritable state dir is found here)."""
    state = paths.state_dir()
    problem = own_path_problem(state, directory=True) or paths.writable_problem(state)
    # a link is refused wherever the switch would open one; a history that is merely broken (a
    # directory in its place) only loses the boot's record, said after the boot
    for name, directory in (("logs", True), ("rig.lock", False)):
        problem = problem or own_path_problem(state / name, directory)
    history = own_path_problem(state / "history.jsonl")
    if history and (state / "history.jsonl").is_symlink():
        problem = problem or history
    if problem:
        return Refusal(problem)
    problems = ctx.launcher.check(spec)
    return Refusal("; ".join(problems)) if problems else None


def after_lock(
    ctx: ServeContext, spec: LaunchSpec, settings: dict[str, Setting], running: ServerRecord | None, force: bool
) -> Refusal | None:
    """Checks against what runs now, made under the lock (a queued switch sees the present)."""
    # behind a front door vLLM gets a free internal port at its boot; the profile's is the door's
    if not (running and running.port == spec.port) and not front_door.runs():
        holder = discover.holder(spec.port)
        if holder:
            return Refusal(f"port {spec.port} is held by {holder}")
    if not force:
        short = vram_shortfall(ctx, spec, settings, running)
        if short:
            return Refusal(short + " (stop them, lower gpu_memory_utilization, or --force to try anyway)")
    host = offload_shortfall(settings, running)
    if host:
        return Refusal(host)
    return None


def offload_gib(argv: tuple[str, ...] | list[str]) -> float:
    """The host RAM a server's --kv-offloading-size pins, in GiB (summed over its TP ranks; 0 without)."""
    for i, word in enumerate(argv):
        value = word.partition("=")[2] if word.startswith("--kv-offloading-size=") else None
        if word == "--kv-offloading-size" and i + 1 < len(argv):
            value = argv[i + 1]
        if value is not None:
            try:
                return max(0.0, float(value))
            except ValueError:
                return 0.0
    return 0.0


def offload_shortfall(settings: dict[str, Setting], running: ServerRecord | None) -> str | None:
    """vLLM's native KV offload pins --kv-offloading-size GiB of host RAM at its boot: more than the
    host has available (with what the running server pins freed at its stop) fails the boot or
    swaps the rig to a crawl, so it is refused before anything stops."""
    import psutil

    setting = settings.get("kv_offloading_size")
    wanted = float(setting.value) if setting is not None and isinstance(setting.value, (int, float)) else 0.0
    if wanted <= 0:
        return None
    freed = offload_gib(running.argv) if running is not None else 0.0
    available = psutil.virtual_memory().available / GIB + freed
    if wanted <= available:
        return None
    return (
        f"--kv-offloading-size {wanted:g} GiB pins that much host RAM, and the host has {available:.1f} GiB available"
        + (f" (with the {freed:g} GiB the running server pins freed at its stop)" if freed else "")
        + ": lower kv_offloading_size, or free host memory"
    )


def _devices(spec: LaunchSpec, count: int, needed: int) -> list[int]:
    raw = spec.env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
    if raw is None or not raw.strip():
        return list(range(count))[:needed]
    picked = [int(x) for x in raw.split(",") if x.strip().isdigit() and int(x) < count]
    return picked[:needed]


def _belongs(process: GpuProcess, record: ServerRecord | None) -> bool:
    """Is this GPU process part of the server the switch will stop?"""
    if record is None:
        return False
    if record.launcher == "docker":
        return process.is_vllm  # the container's processes: no pid of ours to compare
    if process.pid == record.pid:
        return True
    try:
        return os.getpgid(process.pid) == record.pid
    except OSError:
        return False


def vram_shortfall(ctx: ServeContext, spec: LaunchSpec, settings: dict[str, Setting], running: ServerRecord | None) -> str | None:
    """vLLM refuses to start when a GPU's free memory is below total x gpu_memory_utilization
    (its request_memory check). Free after the stop = free now + what the stopped server holds."""
    if ctx.sampler is None:
        return None
    try:
        snapshot = ctx.sampler.snapshot()
    except Exception:  # noqa: BLE001 - no reading, no refusal: the boot will tell
        return None
    gmu = (
        float(settings["gpu_memory_utilization"].value)
        if "gpu_memory_utilization" in settings
        else default_gpu_memory_utilization()
    )
    gpus = {g.index: g for g in snapshot.info.gpus}
    shortfalls: list[tuple[float, str]] = []
    for index in _devices(spec, len(snapshot.samples), gpus_needed(settings)):
        sample: GpuSample = snapshot.samples[index]
        total = gpus[index].memory_total if index in gpus else None
        if total is None or sample.memory_free is None or sample.lost:
            continue
        processes = sample.processes or ()
        released = sum(p.used_memory or 0 for p in processes if _belongs(p, running))
        others = sum(p.used_memory or 0 for p in processes if not _belongs(p, running))
        need = math.ceil(total * gmu)
        # what the driver says is free plus what the stop releases; never more than the card
        # minus what the others hold (the two agree on a real driver)
        available = min(sample.memory_free + released, total - (sample.memory_reserved or 0) - others)
        if available >= need:
            continue
        holders = sorted(
            (p for p in processes if not _belongs(p, running) and (p.used_memory or 0) > 0), key=lambda p: -(p.used_memory or 0)
        )
        held = ", ".join(f"{p.name or 'pid'} (pid {p.pid}, {(p.used_memory or 0) / GIB:.1f} GiB)" for p in holders[:3])
        after = f" once {running.profile} stops" if running else ""
        shortfalls.append(
            (
                (need - available) / GIB,
                f"GPU{index} would have {available / GIB:.1f} GiB free{after}, and gpu_memory_utilization "
                f"{gmu:g} asks for {need / GIB:.1f} of its {total / GIB:.1f} GiB: "
                f"{(need - available) / GIB:.1f} GiB short" + (f"; held by {held}" if held else ""),
            )
        )
    if not shortfalls:
        return None
    shortfalls.sort(key=lambda item: -item[0])  # the worst first; the lower index on a tie
    more = f" (and {len(shortfalls) - 1} more GPU)" if len(shortfalls) > 1 else ""
    return f"vLLM would refuse to start: {shortfalls[0][1]}{more}"
