"""What rigctl knows about the server it started: state_dir/server.json, written atomically.

A later rigctl run adopts the server through this record; the process's start time
guards against a recycled pid.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rigctl import paths
from rigctl.atomic import write_text_atomic


@dataclass(frozen=True)
class ServerRecord:
    launcher: str
    profile: str
    started: float
    log_path: str
    host: str
    port: int
    served_names: tuple[str, ...]
    argv: tuple[str, ...]  # redacted
    pid: int | None = None
    create_time: float | None = None
    unit: str | None = None
    container: str | None = None
    api_key: str | None = field(default=None, repr=False)  # kept to query /v1/models; file is 0600

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def record_file() -> Path:
    return paths.state_dir() / "server.json"


def read_record() -> ServerRecord | None:
    try:
        data = json.loads(record_file().read_text())
        data["served_names"] = tuple(data.get("served_names", ()))
        data["argv"] = tuple(data.get("argv", ()))
        return ServerRecord(**{k: v for k, v in data.items() if k in ServerRecord.__dataclass_fields__})
    except (OSError, ValueError, TypeError):
        return None


def write_record(record: ServerRecord) -> None:
    paths.ensure_private_dir(paths.state_dir())
    write_text_atomic(record_file(), json.dumps(record.to_json(), indent=1) + "\n", mode=0o600)


def clear_record() -> None:
    try:
        record_file().unlink()
    except FileNotFoundError:
        pass
