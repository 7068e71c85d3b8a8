"""`[rigs.NAME]` of config.toml: another rig, driven over SSH (`rigctl --rig NAME`), routed to by
its apps' address (`rigctl rigs --litellm`), or both; each entry checked as it is read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rigctl.errors import BadInputError
from rigctl.toml_lines import line_of


@dataclass(frozen=True)
class RemoteRig:
    """`[rigs.NAME]`: another rig this terminal drives through the system's OpenSSH."""

    name: str
    ssh: str = ""  # the destination as ssh takes it: "user@host", or a Host of ~/.ssh/config ("": not over SSH)
    rigctl: str = "rigctl"  # rigctl's path there ("~/" is that user's home)
    ssh_options: tuple[str, ...] = ()  # more ssh arguments, e.g. ["-p", "2222"] or ["-F", "/path/config"]
    url: str = ""  # where that rig's apps connect (its front door), for a router across rigs
    api_key_env: str = ""  # the environment variable holding that rig's API key (the key is never in a file)


RIG_KEYS = ("ssh", "rigctl", "ssh_options", "url", "api_key_env")


def remote_rigs(tables: Any, path: Path, lines: dict[tuple[str, ...], int]) -> tuple[RemoteRig, ...]:
    """`[rigs.NAME]` tables, each checked here: the destination and options go to ssh as argv
    words, so one that ssh would read as an option is refused rather than passed on."""
    if not isinstance(tables, dict):
        raise BadInputError(f'{path}:{line_of(lines, "rigs")}: rigs: must be tables, e.g. [rigs.box2] ssh = "me@box2"')
    rigs = []
    for name, entries in tables.items():
        where = f"{path}:{line_of(lines, 'rigs', name)}: rigs.{name}"
        if not isinstance(entries, dict):
            raise BadInputError(f'{where}: must be a table, e.g. [rigs.{name}] ssh = "me@{name}"')
        if not name or not all(c.isalnum() or c in "-_." for c in name):
            raise BadInputError(f"{where}: a rig's name is letters, digits, '-', '_' and '.'")
        for key in entries:
            if key not in RIG_KEYS:
                raise BadInputError(f"{where}.{key}: not a setting (in [rigs.{name}]: {', '.join(RIG_KEYS)})")
        ssh, rigctl, options = entries.get("ssh", ""), entries.get("rigctl", "rigctl"), entries.get("ssh_options", [])
        url, key_env = entries.get("url", ""), entries.get("api_key_env", "")
        if "ssh" not in entries and "url" not in entries:
            raise BadInputError(
                f'{where}: needs ssh (to drive it: ssh = "me@{name}") or url (where its apps connect: '
                f'url = "http://{name}:8000"), or both'
            )
        if "ssh" in entries and (not isinstance(ssh, str) or not ssh or ssh.startswith("-") or any(c.isspace() for c in ssh)):
            raise BadInputError(f'{where}.ssh: must be the destination ssh takes, e.g. "me@{name}" (no spaces, no leading -)')
        if "url" in entries and not _rig_url(url):
            raise BadInputError(
                f'{where}.url: must be the http(s) address its apps connect to, e.g. "http://{name}:8000" '
                "(scheme, host and port; no path, no user or password)"
            )
        if not isinstance(key_env, str) or (key_env and not key_env.replace("_", "").isalnum()):
            raise BadInputError(f'{where}.api_key_env: must be the name of an environment variable, e.g. "BOX2_API_KEY"')
        if not isinstance(rigctl, str) or not rigctl.strip():
            raise BadInputError(f'{where}.rigctl: must be rigctl\'s path on that rig, e.g. "~/.local/bin/rigctl"')
        if not isinstance(options, list) or not all(isinstance(o, str) and o for o in options):
            raise BadInputError(f'{where}.ssh_options: must be a list of ssh arguments, e.g. ["-p", "2222"]')
        rigs.append(
            RemoteRig(name=name, ssh=ssh, rigctl=rigctl, ssh_options=tuple(options), url=url.rstrip("/"), api_key_env=key_env)
        )
    return tuple(rigs)


def _rig_url(value: object) -> bool:
    """An http(s) origin: a scheme, a host and maybe a port, nothing else (a key in a URL would be
    written into a router's config)."""
    if not isinstance(value, str):
        return False
    try:
        parsed = urlsplit(value)
        parsed.port  # noqa: B018 - raises on a port that is not one
    except ValueError:
        return False
    return (
        parsed.scheme in ("http", "https")
        and bool(parsed.hostname)
        and parsed.username is None
        and parsed.password is None
        and parsed.path in ("", "/")
        and not parsed.query
        and not parsed.fragment
    )
