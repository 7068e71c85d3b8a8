"""rigctl's command line: headless subcommands over the core; no subcommand opens the TUI.

The TUI (and Textual) is imported only inside the command that runs it, so scripts and
cron jobs pay for neither.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rigctl import __version__
from rigctl.cli import (
    common,
    config_cmd,
    gpus,
    logs,
    metrics,
    profile,
    serving,
    sims,
    status,
    topo,
    tui,
)
from rigctl.errors import ExitCode, RigctlError

COMMANDS = (status, topo, gpus, sims, profile, serving, logs, metrics, config_cmd, tui)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rigctl",
        description="See the rig, serve vLLM by profile, watch the engine.",
        epilog=("Exit codes: 0 ok, 1 failure, 2 bad usage or input; switch: 3 failed and rolled back, "
                "4 failed and nothing serves. Run without a subcommand for the TUI."),
    )
    parser.add_argument("--version", action="version", version=f"rigctl {__version__}")
    common.add_global_flags(parser, top_level=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help exits 0, usage errors exit 2
        return int(exc.code or 0)
    handler = getattr(args, "handler", None) or tui.run_tui
    try:
        return int(handler(args))
    except RigctlError as exc:
        print(f"rigctl: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("rigctl: interrupted", file=sys.stderr)
        return int(ExitCode.FAILURE)
    except BrokenPipeError:  # `rigctl gpus --watch | head`
        sys.stderr.close()
        return int(ExitCode.OK)
