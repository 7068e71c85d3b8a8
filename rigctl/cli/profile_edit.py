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


def run_refresh(args: argparse.Namespace) -> int:
    path, table = refresh(args.python, env=dict(os.environ))
    print(f"vLLM {table['vllm_version']}: {len(table['options'])} options written to {path}")
    return 0
