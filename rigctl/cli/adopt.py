"""`rigctl adopt NAME [--pid PID]`: the vLLM server already running, taken over as profile NAME
(imported from the process first when there is no such profile)."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

from rigctl.cli import common
from rigctl.cli.context import make_context
from rigctl.cli.profile_import import source_from_pid
from rigctl.errors import RigctlError
from rigctl.profiles import importing
from rigctl.profiles.edit import import_profile
from rigctl.serve.adopt import adopt, adoption_record, chosen_server


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "adopt")
    p.add_argument("name", help="the profile it serves: an existing one, or a new one imported from the process")
    p.add_argument("--pid", type=int, help="the vLLM server's pid (default: the one `vllm serve` running here)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    ctx = make_context(args)
    found = chosen_server(args.pid)
    new = args.name not in ctx.store.names()
    table = ctx.tables.for_command(ctx.tables.default_command).table if new else ctx.tables.choose(ctx.store.load(args.name)).table
    adoption_record(ctx, args.name, found, table)  # every refusal before a profile is written for it
    written: list[Path] = []
    if new:
        source = source_from_pid(found.pid, f"rigctl adopt {args.name} --pid {found.pid}")
        imported = importing.build_profile(source, table, dt.date.today().isoformat())
        path, env_path, _ = import_profile(ctx.store, args.name, imported, ctx.tables, ctx.rig)
        written = [path, *([env_path] if env_path else [])]
        print(f"imported process {found.pid} as {args.name}: {path}" + (f" (secrets in {env_path})" if env_path else ""))
    try:
        profile = ctx.store.load(args.name)
        record = adopt(ctx, args.name, found, ctx.tables.choose(profile).table)
    except RigctlError:
        for path in written:  # refused after all (the rig changed meanwhile): nothing of it stays
            path.unlink(missing_ok=True)
        raise
    log = f"; its log: {record.log_path}" if record.log_path else "; its log is wherever it writes (not a file rigctl can follow)"
    print(f"adopted pid {found.pid} as {args.name}, serving on {record.host}:{record.port}{log}")
    print(f"the next `rigctl switch`, restart or stop drains it and stops it (its process group, {found.pid})")
    return 0
