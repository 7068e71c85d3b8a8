"""`rigctl status [--json]`: the rig at a glance, and what it serves (verified, never assumed)."""

from __future__ import annotations

import argparse
from typing import Any

from rigctl.cli import common
from rigctl.cli.rig_text import status_text
from rigctl.config import load_settings
from rigctl.gpu.report import snapshot_json
from rigctl.serve.status import observe


def register(sub: Any) -> None:
    parser = common.add_command(sub, "status", "the rig at a glance: GPUs, links, warnings, the served profile")
    common.add_json_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    sampler = common.open_sampler(args)
    try:
        snapshot = sampler.snapshot()
    finally:
        sampler.close()
    serving = observe(load_settings(), thorough=True)
    if args.json:
        common.print_json({"rig": snapshot_json(snapshot), "serving": serving.to_json()})
    else:
        print(f"serving: {serving.summary}")
        for note in serving.notes:
            print(f"  note: {note}")
        print(status_text(snapshot))
    return 0
