"""`[rigs.NAME]` of config.toml: another rig, driven over SSH (`rigctl --rig NAME`), routed to by
its apps' address (`rigctl rigs --litellm`), or both; each entry checked as it is read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rigctl.errors import BadInputError
from rigctl.rule_compounds import ListOf, Shaped
from rigctl.rules import Rule, Text, take
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
        if "ssh" not in entries and "url" not in entries:
            raise BadInputError(
                f'{where}: needs ssh (to drive it: ssh = "me@{name}") or url (where its apps connect: '
                f'url = "http://{name}:8000"), or both'
            )
        values = {
            key: take(entries, key, RIG_RULES[key], f"{path}:{line_of(lines, 'rigs', name, key)}", default, f"rigs.{name}")
            for key, default in RIG_DEFAULTS.items()
        }
        rigs.append(
            RemoteRig(
                name=name,
                ssh=values["ssh"],
                rigctl=values["rigctl"],
                ssh_options=values["ssh_options"],
                url=values["url"].rstrip("/"),
                api_key_env=values["api_key_env"],
            )
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


def _ssh_destination(value: str) -> bool:
    return bool(value) and not value.startswith("-") and not any(c.isspace() for c in value)


def _env_name(value: str) -> bool:
    return not value or value.replace("_", "").isalnum()


# Each key's rule (rigctl/rules.py): the destination and options go to ssh as argv words, so one
# that ssh would read as an option is refused rather than passed on.
RIG_RULES: dict[str, Rule] = {
    "ssh": Shaped(Text(), _ssh_destination, 'the destination ssh takes, e.g. "me@box2" (no spaces, no leading -)'),
    "rigctl": Text('rigctl\'s path on that rig, e.g. "~/.local/bin/rigctl"', filled=True),
    "ssh_options": ListOf(Text(filled=True), 'a list of ssh arguments, e.g. ["-p", "2222"]'),
    "url": Shaped(
        Text(),
        _rig_url,
        'the http(s) address its apps connect to, e.g. "http://box2:8000" (scheme, host and port; no path, no user or password)',
    ),
    "api_key_env": Shaped(Text(), _env_name, 'the name of an environment variable, e.g. "BOX2_API_KEY"'),
}
RIG_DEFAULTS: dict[str, Any] = {"ssh": "", "rigctl": "rigctl", "ssh_options": (), "url": "", "api_key_env": ""}
