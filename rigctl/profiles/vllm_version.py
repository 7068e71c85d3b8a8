"""Which vLLM a command runs: `COMMAND --version`, asked once per executable.

vLLM's CLI imports for seconds before it prints its version, so the answer is cached in
$XDG_CACHE_HOME/rigctl/vllm-versions.json, keyed by the command and its executable's path
and mtime: an upgrade in the venv changes the mtime and is asked again. A caller that must
not wait (the TUI's profile list) takes the cached answer only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from rigctl import paths
from rigctl.atomic import write_text_atomic
from rigctl.files import read_own
from rigctl.profiles.schema import Profile
from rigctl.profiles.vllm_args import profile_command
from rigctl.vllm.options import TableChoice, table_for

_VERSION = re.compile(r"^v?(\d+\.\d+(?:\.\d+)?(?:[.\w+-]*)?)$")


def cache_file() -> Path:
    override = os.environ.get("XDG_CACHE_HOME")
    base = Path(override) if override and os.path.isabs(override) else Path.home() / ".cache"
    return base / "rigctl" / "vllm-versions.json"


def _key(command: Sequence[str]) -> str | None:
    program = command[0] if command else ""
    path = program if "/" in program else shutil.which(program)
    if not path:
        return None
    try:
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    return json.dumps([list(command), os.path.realpath(path), mtime])


def _read_cache() -> dict[str, str]:
    try:
        data = json.loads(read_own(cache_file(), 4 * 1024 * 1024) or b"{}")
    except (OSError, ValueError, RecursionError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def parse_version(output: str) -> str | None:
    """The version `vllm --version` printed: its last line that is only a version."""
    for line in reversed(output.strip().splitlines()):
        match = _VERSION.match(line.strip())
        if match:
            return match.group(1)
    return None


def command_version(command: Sequence[str], cached_only: bool = False, timeout: float = 120.0) -> str | None:
    """The vLLM version `command` runs; None when it cannot be told (no such executable, it
    failed, or `cached_only` and it was never asked)."""
    key = _key(command)
    if key is None:
        return None
    cache = _read_cache()
    if key in cache or cached_only:
        return cache.get(key)
    try:
        done = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = parse_version(done.stdout) if done.returncode == 0 else None
    if version is not None:
        cache[key] = version
        try:
            paths.ensure_private_dir(cache_file().parent)
            write_text_atomic(cache_file(), json.dumps(cache, indent=1) + "\n", mode=0o600)
        except OSError:
            pass  # asked again next time: slower, never wrong
    return version


class OptionTables:
    """The option table each profile is checked and rendered against: the one of the vLLM its
    command (`[rigctl] vllm_command`, else the configured one) runs."""

    def __init__(self, default_command: Sequence[str], cached_only: bool = False) -> None:
        self.default_command = tuple(default_command)
        self.cached_only = cached_only
        self._chosen: dict[tuple[str, ...], TableChoice] = {}

    def command_for(self, profile: Profile) -> tuple[str, ...]:
        return profile_command(profile) or self.default_command

    def for_command(self, command: Sequence[str]) -> TableChoice:
        key = tuple(command)
        if key not in self._chosen:
            self._chosen[key] = table_for(command_version(key, cached_only=self.cached_only))
        return self._chosen[key]

    def choose(self, profile: Profile) -> TableChoice:
        return self.for_command(self.command_for(profile))
