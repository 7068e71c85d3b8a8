"""What rigctl knows about the server it started: state_dir/server.json, written atomically.

A later rigctl run adopts the server through this record; the process's start time
guards against a recycled pid, and the boot token (RIGCTL_BOOT_ID in the server's
environment) tells this server from any other that answers on the port. The record holds
no secret: an API key stays in the server's own environment (see launcher.api_key).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rigctl import jsonio, paths
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
    boot_id: str | None = None

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def record_file() -> Path:
    return paths.state_dir() / "server.json"


def read_record() -> ServerRecord | None:
    """The record; None when there is none; jsonio.DamagedFile when it cannot be used."""
    path = record_file()
    data = jsonio.read_object(path)
    return None if data is None else jsonio.build(ServerRecord, data, path)


def write_record(record: ServerRecord) -> None:
    paths.ensure_private_dir(paths.state_dir())
    write_text_atomic(record_file(), jsonio.dumps(record.to_json(), indent=1) + "\n", mode=0o600)


def clear_record() -> None:
    try:
        record_file().unlink()
    except FileNotFoundError:
        pass
