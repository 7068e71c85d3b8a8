"""Boot records, one JSON line per successful boot: the table owners keep by hand."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rigctl import paths
from rigctl.profiles.schema import Profile


@dataclass(frozen=True)
class BootRecord:
    profile: str
    profile_hash: str
    when: float
    argv: list[str]  # redacted
    vllm_version: str | None
    rig: str | None
    kv_tokens: int | None  # "KV capacity at max_model_len" (vLLM's figure; for hybrid models concurrency x len)
    max_concurrency: float | None
    max_model_len: int | None
    available_kv_gib: float | None
    model_load_gib: float | None
    model_load_seconds: float | None
    graph_capture_seconds: float | None
    boot_seconds: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def history_file() -> Path:
    return paths.state_dir() / "history.jsonl"


def profile_hash(profile: Profile) -> str:
    """A hash of what the profile resolves to, so two boots of 'the same' profile can be told apart."""
    content = json.dumps({"model": profile.model, "vllm": profile.vllm, "env": profile.env}, sort_keys=True,
                         default=str)
    return hashlib.sha256(content.encode()).hexdigest()[:12]


def append(record: BootRecord) -> None:
    paths.ensure_private_dir(paths.state_dir())
    line = (json.dumps(record.to_json(), sort_keys=True) + "\n").encode()
    fd = os.open(history_file(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line)  # one write of one line with O_APPEND: never interleaved, never half
        os.fsync(fd)
    finally:
        os.close(fd)


def read_all() -> list[BootRecord]:
    try:
        lines = history_file().read_text().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            out.append(BootRecord(**json.loads(line)))
        except (ValueError, TypeError):
            continue  # a foreign or damaged line is skipped, not fatal
    return out
