"""`rigctl profile import NAME`: read the owner's launch where it lives (the command line, a script,
/proc, `systemctl cat`, a compose file), build the profile (rigctl/profiles/importing.py), write it
validated, and show how it differs from the nearest shipped profile."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import shlex
import subprocess
import sys
from pathlib import Path

from rigctl.cli import common
from rigctl.errors import BadInputError, RigctlError
from rigctl.files import read_input_text
from rigctl.profiles import import_sources, importing
from rigctl.profiles.edit import import_profile
from rigctl.profiles.envfile import parse_env_text
from rigctl.profiles.import_sources import ImportSource
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.summary import nearest
from rigctl.profiles.vllm_args import LaunchSpec, render
from rigctl.profiles.vllm_version import OptionTables

SOURCE_LIMIT = 4 * 1024 * 1024  # a script, a unit or a compose file; never a model's weights by mistake


def _how(args: argparse.Namespace) -> str:
    if args.pid is not None:
        return f"rigctl profile import {args.name} --pid {args.pid}"
    for flag in ("script", "unit", "compose"):
        if getattr(args, flag):
            extra = f" --service {args.service}" if flag == "compose" and args.service else ""
            return f"rigctl profile import {args.name} --{flag} {getattr(args, flag)}{extra}"
    return f"rigctl profile import {args.name} -- ..."


def source_from_pid(pid: int, how: str) -> ImportSource:
    """A running process's launch, read from /proc (one-line errors for what cannot be read)."""
    base = Path("/proc") / str(pid)
    try:
        cmdline = (base / "cmdline").read_bytes()
    except FileNotFoundError:
        raise BadInputError(f"no process {pid}") from None
    except OSError as exc:
        raise BadInputError(f"process {pid}: its command line cannot be read: {exc.strerror}") from None
    try:
        environ = (base / "environ").read_bytes()
    except OSError as exc:  # another user's process: its environment is theirs to read
        raise BadInputError(f"process {pid}: its environment cannot be read ({exc.strerror}): run as its user or root") from None
    return import_sources.from_proc(cmdline, environ, pid, how)


def _unit_text(unit: str) -> tuple[str, str]:
    path = Path(unit).expanduser()
    if "/" in unit or path.exists():
        return read_input_text(path, SOURCE_LIMIT, "unit file"), str(path)
    for scope in ([], ["--user"]):
        try:
            done = subprocess.run(["systemctl", *scope, "cat", "--", unit], capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BadInputError(f"systemctl cat {unit}: {exc}") from None
        if done.returncode == 0:
            return done.stdout, f"unit {unit}"
    raise BadInputError(f"no systemd unit {unit} (systemctl cat found none, system or --user); give the unit file's path")


def _env_text(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError):
        return None


def source_of(args: argparse.Namespace) -> ImportSource:
    how = _how(args)
    words = list(args.command_line)
    chosen = [f for f in ("script", "pid", "unit", "compose") if getattr(args, f) is not None]
    if chosen and words:
        raise BadInputError(f"give the launch one way: --{chosen[0]} or a command line after --, not both")
    if args.service and not args.compose:
        raise BadInputError("--service names a service of --compose FILE")
    if args.pid is not None:
        return source_from_pid(args.pid, how)
    if args.script:
        path = Path(args.script).expanduser()
        return import_sources.from_script(read_input_text(path, SOURCE_LIMIT, "script"), str(path), how)
    if args.unit:
        text, where = _unit_text(args.unit)
        return import_sources.from_unit(text, where, _env_text, how)
    if args.compose:
        import yaml  # only here: the one command that reads YAML

        path = Path(args.compose).expanduser()
        text = read_input_text(path, SOURCE_LIMIT, "compose file")
        if not args.service:
            raise BadInputError(f"{path}: name the service that runs vLLM: --service NAME")
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f":{mark.line + 1}" if mark is not None else ""
            raise BadInputError(f"{path}{line}: not YAML: {getattr(exc, 'problem', None) or exc}") from None
        dotenv = path.parent / ".env"  # what docker compose reads beside the file, under the shell's environment
        try:
            variables = {**parse_env_text(dotenv.read_text()), **os.environ} if dotenv.is_file() else dict(os.environ)
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInputError(f"{dotenv}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
        return import_sources.from_compose(document, args.service, str(path), how, variables)
    return with_shell_env(import_sources.from_command_line(words, how))


def with_shell_env(source: ImportSource) -> ImportSource:
    """A command line typed here runs with this shell's exported environment: what of it vLLM's
    stack reads is taken (the line's own KEY=value words over it), and said."""
    taken = {k: v for k, v in import_sources.engine_env(os.environ).items() if k not in source.env}
    if not taken:
        return source
    note = f"env {', '.join(sorted(taken))}: taken from this shell's environment, as vLLM started from it would see them"
    return dataclasses.replace(source, env={**taken, **source.env}, notes=(*source.notes, note))


def run(args: argparse.Namespace) -> int:
    source = source_of(args)
    tables = common.option_tables(args)
    imported = importing.build_profile(source, tables.for_command(tables.default_command).table, dt.date.today().isoformat())
    store = ProfileStore()
    path, env_path, warnings = import_profile(
        store, args.name, imported, tables, common.rig_info_or_none(args, quiet=True), replace=args.replace
    )
    for warning in warnings:
        print(warning, file=sys.stderr)
    print(f"imported {source.origin} as {args.name}: {path}")
    if env_path is not None:
        print(f"  secrets ({', '.join(sorted(imported.secrets))}) in {env_path} (0600), not in the profile")
    for kept in imported.kept:
        print(f"  kept verbatim in [rigctl] extra_args (this vLLM's option table does not know it): {kept}")
    for note in imported.notes:
        print(f"  note: {note}")
    _print_nearest(store, tables, args.name)
    print(f"next: rigctl profile validate {args.name}; rigctl profile argv {args.name}; rigctl switch {args.name}")
    return 0


def _print_nearest(store: ProfileStore, tables: OptionTables, name: str) -> None:
    mine = store.load(name)
    spec = render(mine, tables.choose(mine).table, tables.default_command)
    shipped: dict[str, LaunchSpec] = {}
    for path in sorted(store.shipped.glob("*.toml")):  # the shipped examples, whatever the user has beside them
        try:
            profile = store.load(str(path))
            shipped[path.stem] = render(profile, tables.choose(profile).table, tables.default_command)
        except RigctlError:
            continue  # a base to extend (no model), or one this vLLM refuses: no comparison to offer
    found = nearest(shipped, spec)
    if found is None:
        return
    other, changes = found
    print(f"nearest shipped profile: {other} ({len(changes)} difference(s)); `rigctl profile diff {other} {name}`:")
    for change in changes:
        print(f"  {change}")
    print(f"  command line: {shlex.join(spec.redacted_argv())}")
