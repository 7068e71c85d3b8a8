"""Who holds GPU memory: psutil names the process, rigctl recognises vLLM's.

vLLM sets process titles (`VLLM::EngineCore`, `VLLM::Worker_TP0`, ...); its API server
shows as `vllm serve ...` or `python -m vllm.entrypoints...`. Command lines do not change
for a pid, so they are read once per (pid, start time) and cached (rigctl/proc.py tells a
process from a later one with the same pid).
"""

from __future__ import annotations

import dataclasses
import re

import psutil

from rigctl.gpu.model import GpuProcess
from rigctl.proc import start_time
from rigctl.redact import redact_argv

_TITLE = re.compile(r"^VLLM::(?P<what>[A-Za-z]+)(?:_(?P<rank>[A-Za-z0-9_]+))?")


def vllm_role(name: str | None, cmdline: str | None) -> str | None:
    """'engine core', 'worker TP0', 'api server', 'simulated vLLM' or None."""
    for text in (name or "", cmdline or ""):
        match = _TITLE.match(text)
        if match:
            what, rank = match["what"], match["rank"]
            if what == "EngineCore":
                return f"engine core {rank}" if rank else "engine core"
            if what.startswith("Worker"):
                return f"worker {rank}" if rank else "worker"
            return what.lower()
    cmd = cmdline or ""
    if "rigctl.sim.vllm_server" in cmd:
        return "simulated vLLM"
    if re.search(r"(^|[/\s])vllm\s+serve\b", cmd) or "vllm.entrypoints" in cmd:
        return "api server"
    if (name or "").startswith("VllmWorker") or "VllmWorker" in cmd:
        return "worker"
    return None


class ProcessInspector:
    """Adds name, command line and user to GpuProcess values; caches per process start."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[float, str | None, str | None, str | None]] = {}

    def _lookup(self, pid: int) -> tuple[str | None, str | None, str | None]:
        started = start_time(pid)
        if started is None:
            self._cache.pop(pid, None)
            return None, None, None
        cached = self._cache.get(pid)
        if cached and cached[0] == started:
            return cached[1], cached[2], cached[3]
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                name = proc.name()
                # redacted once here, so no view of the rig (JSON, text, TUI) can show a key
                cmdline = " ".join(redact_argv(proc.cmdline())) or None
                user = proc.username()
        except psutil.Error:
            return None, None, None
        self._cache[pid] = (started, name, cmdline, user)
        return name, cmdline, user

    def enrich(self, processes: tuple[GpuProcess, ...] | None) -> tuple[GpuProcess, ...] | None:
        if processes is None:
            return None
        out = []
        for proc in processes:
            if proc.cmdline is None or proc.user is None or proc.name is None:
                name, cmdline, user = self._lookup(proc.pid)
                proc = dataclasses.replace(
                    proc,
                    name=proc.name or name,
                    cmdline=proc.cmdline or cmdline,
                    user=proc.user or user,
                )
            out.append(dataclasses.replace(proc, vllm_role=vllm_role(proc.name, proc.cmdline)))
        return tuple(out)

    def forget_missing(self, live: set[int]) -> None:
        for pid in list(self._cache):
            if pid not in live:
                del self._cache[pid]
