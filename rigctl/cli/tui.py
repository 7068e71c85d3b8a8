"""`rigctl` with no subcommand opens the TUI; `rigctl demo` opens it on a simulated rig."""

from __future__ import annotations

import argparse
from typing import Any

from rigctl.cli import common
from rigctl.gpu.backend import open_backend, selected_sim

DEMO_RIG = "2x3090-nvlink"


def register(sub: Any) -> None:
    parser = common.add_command(sub, "demo", "open the TUI on a simulated rig (no GPU needed)")
    parser.set_defaults(handler=run_demo)


def run_tui(args: argparse.Namespace) -> int:
    from rigctl.gpu.sampler import RigSampler
    from rigctl.tui.app import make_app  # Textual is only imported here

    sampler = RigSampler(open_backend(selected_sim(getattr(args, "sim", None))))
    try:
        make_app(sampler).run()
    finally:
        sampler.close()
    return 0


def run_demo(args: argparse.Namespace) -> int:
    args.sim = selected_sim(getattr(args, "sim", None)) or DEMO_RIG
    return run_tui(args)
