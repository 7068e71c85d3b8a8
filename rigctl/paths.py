"""Where rigctl keeps its files: XDG base directories, overridable by env.

Kept free of any other rigctl import so every layer can use it.
"""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def config_dir() -> Path:
    """$XDG_CONFIG_HOME/rigctl (or RIGCTL_CONFIG_DIR)."""
    override = os.environ.get("RIGCTL_CONFIG_DIR")
    return Path(override) if override else _xdg("XDG_CONFIG_HOME", ".config") / "rigctl"


def state_dir() -> Path:
    """$XDG_STATE_HOME/rigctl (or RIGCTL_STATE_DIR): active profile, boot records, logs."""
    override = os.environ.get("RIGCTL_STATE_DIR")
    return Path(override) if override else _xdg("XDG_STATE_HOME", ".local/state") / "rigctl"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700; tighten it if it already exists."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path
