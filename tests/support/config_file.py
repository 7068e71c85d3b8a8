"""Writing the isolated test config.toml (tests run with their own XDG dirs)."""

from __future__ import annotations

from pathlib import Path

from rigctl.config import config_path


def write_config(text: str) -> Path:
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
