"""`rigctl sims [--json]`: the simulated rigs shipped with rigctl."""

from __future__ import annotations

import argparse

from rigctl import fmt
from rigctl.backends import selected_sim
from rigctl.cli import common
from rigctl.sim.rigspec import list_rigs


def register(sub: common.Subparsers) -> None:
    parser = common.add_command(sub, "sims")
    common.add_json_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    rigs, selected = list_rigs(), selected_sim(getattr(args, "sim", None))
    if args.json:
        common.print_json(
            [
                {"name": r.name, "description": r.description, "gpus": [g.name for g in r.gpus], "selected": r.name == selected}
                for r in rigs
            ]
        )
        return 0
    print(fmt.table([("*" if r.name == selected else "", r.name, r.description) for r in rigs]))
    return 0
