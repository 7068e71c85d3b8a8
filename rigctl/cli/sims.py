"""`rigctl sims [--json]`: the simulated rigs shipped with rigctl."""

from __future__ import annotations

import argparse
from typing import Any

from rigctl.cli import common
from rigctl.sim.rigspec import list_rigs


def register(sub: Any) -> None:
    parser = sub.add_parser("sims", help="list the simulated rigs (for --sim NAME / RIGCTL_SIM)",
                            description="List the simulated rigs shipped with rigctl.")
    common.add_json_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    rigs = list_rigs()
    if args.json:
        common.print_json([{"name": r.name, "description": r.description, "gpus": [g.name for g in r.gpus]}
                           for r in rigs])
        return 0
    width = max(len(r.name) for r in rigs)
    for rig in rigs:
        print(f"{rig.name:<{width}}  {rig.description}")
    return 0
