"""How processes tell a simulated rig what they hold: one JSON claim file per process.

The vLLM simulator writes its claim (memory per GPU, a process title per GPU, how busy
it is); the simulated GPU backend reads every live claim on each sample, so the rig
view and the engine agree. Claims of dead processes are ignored, never trusted.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from rigctl import paths
from rigctl.atomic import write_text_atomic
from rigctl.proc import same_process, start_id, start_time


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
    target = claims_dir / f"{pid}.json"
    write_text_atomic(
        target, json.dumps({"pid": pid, "create_time": start_time(pid), "start_id": start_id(pid), "gpus": entries}), mode=0o644
    )
    return target


def remove_claim(claims_dir: Path, pid: int) -> None:
    try:
        (claims_dir / f"{pid}.json").unlink()
    except FileNotFoundError:
        pass


def read_claims(claims_dir: Path | None) -> list[ClaimedProcess]:
    return ClaimsReader(claims_dir).read()


class ClaimsReader:
    """read_claims() for a backend sampled every second: a claim file is parsed again only
    when it changed, and each claimant's process is looked up once, then only re-checked."""

    def __init__(self, claims_dir: Path | None) -> None:
        self.claims_dir = claims_dir
        self._parsed: dict[str, tuple[tuple[int, int, int], int, float | None, str | None, list[ClaimedProcess]]] = {}

    def read(self) -> list[ClaimedProcess]:
        if self.claims_dir is None:
            return []
        try:
            files = [f for f in os.scandir(self.claims_dir) if f.name.endswith(".json")]
        except FileNotFoundError:
            files = []
        out: list[ClaimedProcess] = []
        parsed: dict[str, tuple[tuple[int, int, int], int, float | None, str | None, list[ClaimedProcess]]] = {}
        for entry in files:
            try:
                stat = entry.stat()
                version = (stat.st_ino, stat.st_mtime_ns, stat.st_size)  # rewrites replace the file
                cached = self._parsed.get(entry.path)
                parsed[entry.path] = cached if cached and cached[0] == version else (version, *_parse(entry.path))
            except (OSError, ValueError, KeyError, TypeError):
                continue  # a half-written or foreign file is not a claim
            _, pid, created, start, claims = parsed[entry.path]
            if same_process(pid, created, start):  # a claim of a dead (or a reused) pid is no claim
                out.extend(claims)
        self._parsed = parsed
        return out


def _parse(path: str) -> tuple[int, float | None, str | None, list[ClaimedProcess]]:
    with open(path) as handle:
        data = json.load(handle)
    pid = int(data["pid"])
    claims = [
        ClaimedProcess(
            pid=pid,
            gpu=int(item["gpu"]),
            memory_bytes=int(item.get("memory_bytes", 0)),
            title=item.get("title"),
            load=max(0.0, min(1.0, float(item.get("load", 0.0)))),
        )
        for item in data["gpus"]
    ]
    created, start = data.get("create_time"), data.get("start_id")
    return pid, None if created is None else float(created), None if start is None else str(start), claims
