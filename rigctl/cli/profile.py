"""`rigctl profile list|show|diff|validate|argv` (editing lives in profile_edit)."""

from __future__ import annotations

import argparse
import sys

from rigctl.cli import common, profile_edit
from rigctl.errors import ExitCode
from rigctl.profiles.schema import Diagnostic, Profile, ProfileError
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.summary import knobs, launch_diff
from rigctl.profiles.text import list_table, show_text
from rigctl.profiles.validate import validate
from rigctl.profiles.vllm_args import LaunchSpec, render
from rigctl.profiles.vllm_version import OptionTables
from rigctl.redact import redact_env, redact_mapping
from rigctl.state.statefiles import active_profile_name
from rigctl.vllm.options import OptionTable


def register(sub: common.Subparsers) -> None:
    parser = common.add_command(sub, "profile")
    psub = parser.add_subparsers(dest="profile_command", metavar="ACTION", required=True)

    p = common.add_command(psub, "list", "every profile with its first-class knobs; * marks the active one")
    common.add_json_flag(p)
    p.set_defaults(handler=run_list)

    p = common.add_command(psub, "show", "a profile resolved after extends, with where each value came from")
    p.add_argument("name")
    common.add_json_flag(p)
    p.set_defaults(handler=run_show)

    p = common.add_command(psub, "diff", "what changes in argv and env from profile A to profile B")
    p.add_argument("a")
    p.add_argument("b")
    common.add_json_flag(p)
    p.set_defaults(handler=run_diff)

    p = common.add_command(psub, "validate", "check profiles against vLLM's options and the rig (exit 2 on errors)")
    p.add_argument("names", nargs="*", metavar="NAME|PATH", help="default: every profile")
    common.add_json_flag(p)
    p.set_defaults(handler=run_validate)

    p = common.add_command(psub, "argv", "the command line a profile runs (env first, shell-quoted for display)")
    p.add_argument("name")
    common.add_json_flag(p)
    p.set_defaults(handler=run_argv)

    profile_edit.register(psub)


def _noted(notes: set[str], note: str | None) -> None:
    """A table note once per command, on stderr: --json output stays a clean document."""
    if note and note not in notes:
        notes.add(note)
        print(f"note: {note}", file=sys.stderr)


def run_list(args: argparse.Namespace) -> int:
    store, tables, notes = ProfileStore(), common.option_tables(args), set[str]()
    active = active_profile_name()
    rows = []
    for name in store.names():
        try:
            profile = store.load(name)
            choice = tables.choose(profile)
            _noted(notes, choice.note)
            rows.append(
                {
                    "name": name,
                    "active": name == active,
                    "shipped": profile.shipped,
                    "description": profile.description,
                    "model": profile.model,
                    "vllm_version": choice.table.version,
                    **knobs(profile, choice.table).as_dict(),
                    "error": None,
                }
            )
        except ProfileError as exc:
            rows.append({"name": name, "active": name == active, "error": str(exc.diagnostics[0])})
    if args.json:
        common.print_json(rows)
    else:
        print(list_table(rows))
    return 0


def run_show(args: argparse.Namespace) -> int:
    store, tables = ProfileStore(), common.option_tables(args)
    profile = store.load(args.name)
    choice = tables.choose(profile)
    _noted(set(), choice.note)
    table = choice.table
    diagnostics = validate(profile, table, common.rig_info_or_none(args))
    spec = None if any(d.severity == "error" for d in diagnostics) else render(profile, table, tables.default_command)
    if args.json:
        common.print_json(
            {
                "name": profile.name,
                "path": str(profile.path),
                "shipped": profile.shipped,
                "chain": profile.chain,
                "description": profile.description,
                "model": profile.model,
                "vllm_version": table.version,
                "knobs": knobs(profile, table).as_dict(),
                "vllm": redact_mapping(profile.vllm),
                "env": spec.redacted_env() if spec else redact_env(profile.env),
                "origins": {k: {"path": str(o.path), "line": o.line, "profile": o.profile} for k, o in profile.origins.items()},
                "argv": spec.redacted_argv() if spec else None,
                "diagnostics": [d.__dict__ for d in diagnostics],
            }
        )
    else:
        print(show_text(profile, table, spec, diagnostics))
    return int(ExitCode.BAD_INPUT) if spec is None else 0


def _render(tables: OptionTables, profile: Profile, notes: set[str]) -> LaunchSpec:
    choice = tables.choose(profile)
    _noted(notes, choice.note)
    return render(profile, choice.table, tables.default_command)


def run_diff(args: argparse.Namespace) -> int:
    store, tables, notes = ProfileStore(), common.option_tables(args), set[str]()
    a, b = _render(tables, store.load(args.a), notes), _render(tables, store.load(args.b), notes)
    changes = launch_diff(a, b)
    if args.json:
        common.print_json([c.__dict__ for c in changes])
        return 0
    print(f"--- {args.a}\n+++ {args.b}")
    if not changes:
        print("(same command line and environment)")
    for change in changes:
        print(f"  {change}")
    return 0


def run_validate(args: argparse.Namespace) -> int:
    from rigctl.config import load_settings
    from rigctl.fit.check import check_profile

    store, tables, notes = ProfileStore(), common.option_tables(args), set[str]()
    host_paths = load_settings().launcher != "docker"  # in a container, a model path is the container's
    rig = common.rig_info_or_none(args)
    names = args.names or store.names()
    results: dict[str, list[Diagnostic]] = {}
    checked: dict[str, str] = {}  # profile -> the vLLM version its table is of
    used: dict[str, OptionTable] = {}
    for name in names:
        try:
            profile = store.load(name)
            choice = tables.choose(profile)
            _noted(notes, choice.note)
            checked[name], used[choice.table.version] = choice.table.version, choice.table
            results[name] = list(check_profile(profile, choice.table, rig, tables.default_command, host_paths).diagnostics)
        except ProfileError as exc:
            results[name] = list(exc.diagnostics)
    failed = [n for n, ds in results.items() if any(d.severity == "error" for d in ds)]
    if args.json:
        common.print_json(
            {
                "vllm_versions": checked,
                "rig": rig.backend if rig else None,
                "profiles": {n: [d.__dict__ for d in ds] for n, ds in results.items()},
            }
        )
    else:
        for name, diagnostics in results.items():
            errors = sum(d.severity == "error" for d in diagnostics)
            warnings = len(diagnostics) - errors
            verdict = "ok" if not errors else f"{errors} error{'s' * (errors != 1)}"
            print(f"{name}: {verdict}" + (f", {warnings} warning{'s' * (warnings != 1)}" if warnings else ""))
            for diagnostic in diagnostics:
                print(f"  {diagnostic}")
        against = ", ".join(f"vLLM {t.version} options ({t.origin})" for t in used.values()) or "no option table"
        print(
            f"checked against {against}" + (f" and rig {rig.backend}" if rig else "; rig not known, GPU count not checked"),
            file=sys.stderr,
        )
    return int(ExitCode.BAD_INPUT) if failed else 0


def run_argv(args: argparse.Namespace) -> int:
    """The command that will really run: the configured vllm_command (or the profile's own),
    rendered for the options of the version it runs."""
    spec = _render(common.option_tables(args), ProfileStore().load(args.name), set())
    if args.json:
        common.print_json(
            {
                "argv": spec.redacted_argv(),
                "env": spec.redacted_env(),
                "host": spec.host,
                "port": spec.port,
                "served_model_names": spec.served_names,
            }
        )
    else:
        print(spec.display())
    return 0
