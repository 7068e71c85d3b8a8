"""`rigctl profile set|unset|new|refresh-options`: edits that keep comments, or nothing."""

from __future__ import annotations

import argparse
import os
import sys

from rigctl.cli import common
from rigctl.profiles.edit import new_profile, set_value, unset_value
from rigctl.profiles.refresh import refresh
from rigctl.profiles.schema import Diagnostic
from rigctl.profiles.store import ProfileStore
from rigctl.redact import REDACTED, is_secret_env, is_secret_option


def register(psub: common.Subparsers) -> None:
    p = common.add_command(psub, "set", "set a key in a user profile (validated first; comments kept)")
    p.add_argument("name")
    p.add_argument("key", help="vllm.<option>, env.<NAME>, rigctl.<setting>, description, model, extends")
    p.add_argument("value", help="a TOML value: 8, 0.95, true, '\"text\"', '{ method = \"mtp\" }'")
    p.set_defaults(handler=run_set)

    p = common.add_command(psub, "unset", "remove a key from a user profile")
    p.add_argument("name")
    p.add_argument("key")
    p.set_defaults(handler=run_unset)

    p = common.add_command(psub, "new", "create a user profile that extends another")
    p.add_argument("name")
    p.add_argument("--from", dest="base", required=True, metavar="BASE")
    p.set_defaults(handler=run_new)

    p = common.add_command(
        psub,
        "import",
        "a profile from the vLLM you already run: a command line, a script, a process, a systemd unit or a compose service",
    )
    p.add_argument("name", help="the new profile's name")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--script", metavar="FILE", help="a shell script with a `vllm serve ...` line")
    source.add_argument("--pid", type=int, help="a running vLLM server (its argv and the environment vLLM reads, from /proc)")
    source.add_argument("--unit", metavar="UNIT|FILE", help="a systemd unit (read with systemctl cat) or a unit file")
    source.add_argument("--compose", metavar="FILE", help="a docker compose file (with --service)")
    p.add_argument("--service", help="the compose service that runs vLLM")
    p.add_argument("--replace", action="store_true", help="write over a user profile of that name")
    p.epilog = "or the command line itself after --: rigctl profile import NAME -- vllm serve MODEL -tp 2 ..."
    p.set_defaults(handler=run_import, command_line=[])

    p = common.add_command(psub, "refresh-options", "read the option table from an installed vLLM")
    p.add_argument("--python", default=sys.executable, help="the Python that has vLLM installed (default: this one)")
    p.set_defaults(handler=run_refresh)


def _print_warnings(diagnostics: list[Diagnostic]) -> None:
    for diagnostic in diagnostics:
        print(diagnostic, file=sys.stderr)


def run_set(args: argparse.Namespace) -> int:
    warnings = set_value(
        ProfileStore(), args.name, args.key, args.value, common.option_tables(args), common.rig_info_or_none(args, quiet=True)
    )
    _print_warnings(warnings)
    secret = is_secret_option(args.key.partition(".")[2] or args.key) or (
        args.key.startswith("env.") and is_secret_env(args.key[4:])
    )
    print(f"{args.name}: {args.key} = {REDACTED if secret else args.value}")
    return 0


def run_unset(args: argparse.Namespace) -> int:
    warnings = unset_value(
        ProfileStore(), args.name, args.key, common.option_tables(args), common.rig_info_or_none(args, quiet=True)
    )
    _print_warnings(warnings)
    print(f"{args.name}: {args.key} removed")
    return 0


def run_new(args: argparse.Namespace) -> int:
    path, warnings = new_profile(
        ProfileStore(), args.name, args.base, common.option_tables(args), common.rig_info_or_none(args, quiet=True)
    )
    _print_warnings(warnings)
    print(f"created {path} (extends {args.base})")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from rigctl.cli.profile_import import run

    return run(args)


def run_refresh(args: argparse.Namespace) -> int:
    path, table = refresh(args.python, env=dict(os.environ))
    print(f"vLLM {table['vllm_version']}: {len(table['options'])} options written to {path}")
    return 0
