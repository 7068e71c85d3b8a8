"""`rigctl config [--json]`: the effective settings and where each one came from."""

from __future__ import annotations

import argparse
import shlex
from typing import TypedDict

from rigctl import fmt
from rigctl.cli import common
from rigctl.config import Settings, as_table, config_path, field_location, load_settings
from rigctl.profiles.store import user_dir


def register(sub: common.Subparsers) -> None:
    parser = common.add_command(sub, "config")
    common.add_json_flag(parser)
    parser.set_defaults(handler=run)


class SettingRow(TypedDict):
    setting: str
    value: object
    source: str


def rows(settings: Settings) -> list[SettingRow]:
    out: list[SettingRow] = []
    for name, value in as_table(settings).items():
        table, key = field_location(name)
        out.append(
            SettingRow(
                setting=f"{table}.{key}",
                value=list(value) if isinstance(value, tuple) else value,
                source=settings.sources.get(name, "default"),
            )
        )
    for rig in settings.rigs:  # [rigs.NAME]: one row per key, as the file has them
        keys = (("ssh", rig.ssh), ("rigctl", rig.rigctl), ("ssh_options", list(rig.ssh_options)), ("url", rig.url))
        for key, value in (*keys, ("api_key_env", rig.api_key_env)):
            out.append(SettingRow(setting=f"rigs.{rig.name}.{key}", value=value, source=settings.sources[f"rigs.{rig.name}"]))
    return out


def _shown(value: object) -> str:
    if isinstance(value, list):
        return shlex.join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if value not in ("", None) else "(unset)"


def run(args: argparse.Namespace) -> int:
    settings = load_settings()
    path = config_path()
    table = rows(settings)
    if args.json:
        common.print_json(
            {
                "config_file": str(path),
                "config_file_exists": path.is_file(),
                "profiles_dir_effective": str(user_dir()),
                "settings": table,
            }
        )
        return 0
    print(f"config file: {path}{'' if path.is_file() else ' (absent: all defaults)'}")
    print(f"profiles dir: {user_dir()}")
    print(fmt.table([("", row["setting"], _shown(row["value"]), row["source"]) for row in table]))
    return 0
