"""`rigctl status [--json]`: the rig at a glance, and what it serves (verified, never assumed)."""

from __future__ import annotations

import argparse
from typing import Any

from rigctl.cli import common
from rigctl.cli.rig_text import status_text
from rigctl.config import load_settings
from rigctl.errors import NoDriverError
from rigctl.gpu.report import snapshot_json
from rigctl.serve.serving import observe


def register(sub: Any) -> None:
    parser = common.add_command(sub, "status")
    common.add_json_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings()
    try:
        sampler = common.open_sampler(args)
    except NoDriverError as exc:
        if not common.serves_without_a_driver(settings):
            raise
        sampler, rig_error = None, str(exc)  # a CPU build of vLLM: what serves is still worth saying
    snapshot = None
    if sampler is not None:
        try:
            snapshot = sampler.snapshot()
        finally:
            sampler.close()
    serving = observe(settings, thorough=True)
    if args.json:
        common.print_json({"rig": snapshot_json(snapshot) if snapshot else None,
                           **({} if snapshot else {"rig_error": rig_error}), "serving": serving.to_json()})
    else:
        print(f"serving: {serving.summary}")
        for note in serving.notes:
            print(f"  note: {note}")
        print(status_text(snapshot) if snapshot else f"rig: {rig_error}")
    return 0
