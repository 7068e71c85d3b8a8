"""Environment files: KEY=value lines as systemd's EnvironmentFile=, docker's --env-file and a
shell's `export` lines write them. One reader for all of them: the launchers' own 0600 files,
a unit's EnvironmentFile an import reads, and a profile's `[rigctl] env_file` (its secrets)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rigctl.profiles.schema import Profile

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_env_text(text: str) -> dict[str, str]:
    """The assignments of `text`: comments (# or ;) and blank lines skipped, an `export ` prefix
    dropped, a value in double quotes unescaped (\\" and \\\\), in single quotes taken as written."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, eq, value = line.partition("=")
        key = key.strip()
        if not eq or not _NAME.fullmatch(key):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        elif len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        out[key] = value
    return out


def read_env_file(path: Path) -> dict[str, str]:
    """The file's assignments; {} where it cannot be read (the caller checks what it needs)."""
    try:
        return parse_env_text(path.read_text())
    except (OSError, UnicodeDecodeError):
        return {}


def env_line(key: str, value: str) -> str:
    """One KEY="value" line that parse_env_text and systemd read back as `value`. A line break
    cannot be carried: ValueError naming the key."""
    if "\n" in value or "\r" in value:
        raise ValueError(f"env.{key}: a value with a line break cannot go into an environment file")
    return f'{key}="{value.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'


def shell_assignment(word: str) -> tuple[str, str] | None:
    """`KEY=value` as a word before a command (already unquoted by shlex), or None."""
    key, eq, value = word.partition("=")
    return (key, value) if eq and _NAME.fullmatch(key) else None


def env_file_path(profile: Profile) -> Path | None:
    """The profile's `[rigctl] env_file`: ~ expanded, a relative path read from the directory of
    the file that set it; None when it is not a non-empty string."""
    value = profile.rigctl.get("env_file")
    if not isinstance(value, str) or not value.strip():
        return None
    path = Path(value).expanduser()
    if not path.is_absolute():
        origin = profile.origin("rigctl.env_file")
        path = (origin.path if origin else profile.path).parent / path
    return path


def profile_file_env(profile: Profile) -> dict[str, str]:
    """What the profile's env file sets ({} without one; validation has said when it is unreadable)."""
    path = env_file_path(profile)
    return read_env_file(path) if path is not None else {}
