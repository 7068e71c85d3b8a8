"""How processes tell a simulated rig what they hold: one JSON claim file per process.

The vLLM simulator writes its claim (memory per GPU, a process title per GPU, how busy
it is); the simulated GPU backend reads every live claim on each sample, so the rig
view and the engine agree. Claims of dead processes are ignored, never trusted.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import psutil

from rigctl import paths


@dataclass(frozen=True)
class ClaimedProcess:
    pid: int
    gpu: int
    memory_bytes: int
    title: str | None  # e.g. "VLLM::Worker_TP0"; None lets the process's own name show
    load: float  # 0..1, how busy this process keeps that GPU


def default_claims_dir() -> Path:
    return paths.state_dir() / "sim-claims"


def write_claim(claims_dir: Path, pid: int, entries: list[dict[str, object]]) -> Path:
    """Atomically (re)write the claim of `pid`: entries of gpu, memory_bytes, title, load."""
    claims_dir.mkdir(parents=True, exist_ok=True)
    try:
        created = psutil.Process(pid).create_time()
    except psutil.Error:
        created = None
    target = claims_dir / f"{pid}.json"
    fd, tmp = tempfile.mkstemp(dir=claims_dir, prefix=f".{pid}.", suffix=".tmp")
    with os.fdopen(fd, "w") as handle:
        json.dump({"pid": pid, "create_time": created, "gpus": entries}, handle)
    os.replace(tmp, target)
    return target


def remove_claim(claims_dir: Path, pid: int) -> None:
    try:
        (claims_dir / f"{pid}.json").unlink()
    except FileNotFoundError:
        pass


def read_claims(claims_dir: Path | None) -> list[ClaimedProcess]:
    if claims_dir is None:
        return []
    try:
        files = [f for f in os.scandir(claims_dir) if f.name.endswith(".json")]
    except FileNotFoundError:
        return []
    out: list[ClaimedProcess] = []
    for entry in files:
        try:
            with open(entry.path) as handle:
                data = json.load(handle)
            pid = int(data["pid"])
            if not _alive(pid, data.get("create_time")):
                continue
            for item in data["gpus"]:
                out.append(
                    ClaimedProcess(
                        pid=pid,
                        gpu=int(item["gpu"]),
                        memory_bytes=int(item.get("memory_bytes", 0)),
                        title=item.get("title"),
                        load=max(0.0, min(1.0, float(item.get("load", 0.0)))),
                    )
                )
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a half-written or foreign file is not a claim
    return out


def _alive(pid: int, create_time: float | None) -> bool:
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return create_time is None or abs(proc.create_time() - float(create_time)) < 1.0
    except psutil.Error:
        return False
