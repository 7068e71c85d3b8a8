"""Helpers for tests that run the simulator: free ports, user profiles on them."""

from __future__ import annotations

import socket
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def add_profile(user: Path, name: str, body: str, port: int, parent: str = "qwen36-27b-awq-tp2") -> None:
    """A user profile extending a shipped one, on the test's port, plus `body` in its [vllm] table."""
    (user / f"{name}.toml").write_text(f'extends = "{parent}"\n[vllm]\nport = {port}\n{body}')
