"""rigctl's command line: headless subcommands over the core; no subcommand opens the TUI.

The TUI (and Textual) is imported only inside the command that runs it, so scripts and
cron jobs pay for neither.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import sys
from collections.abc import Sequence

from rigctl import __version__
from rigctl.cli import common
from rigctl.cli.commands import COMMANDS, chosen
from rigctl.errors import ExitCode, RigctlError, printable


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with the chosen command's module registered in full, or, when none is chosen,
    every command a name and a help line (enough for `rigctl --help`); `argv` None: all in full.
    The 25 other commands' stubs were ~3 ms of every `rigctl status` (cProfile, idle VM)."""
    parser = argparse.ArgumentParser(
        prog="rigctl",
        description="See the rig, serve vLLM by profile, watch the engine.",
        epilog=(
            "Exit codes: 0 ok, 1 failure, 2 bad usage or input; switch: 3 failed and rolled back, "
            "4 failed and nothing serves; bench: 5 reject, 6 inconclusive; status --check: 7 down, 8 degraded. "
            "Run without a subcommand for the TUI."
        ),
    )
    parser.add_argument("--version", action="version", version=f"rigctl {__version__}")
    common.add_global_flags(parser, top_level=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    name = None if argv is None else chosen(list(argv))
    # a chosen command's parse never reads the other commands' names, unless help comes before it
    stubs_unread = name is not None and argv is not None and not {"-h", "--help"} & set(list(argv)[: list(argv).index(name)])
    wanted = {module for module, _ in COMMANDS.values()} if argv is None else ({COMMANDS[name][0]} if name else set())
    for module in sorted(wanted, key=[m for m, _ in COMMANDS.values()].index):
        importlib.import_module(f"rigctl.cli.{module}").register(sub)
    for command, (module, help_text) in COMMANDS.items():
        if module not in wanted and not stubs_unread:
            sub.add_parser(command, help=help_text)
    return parser


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """argv parsed; for a command that takes a whole command line after `--` (profile import), the
    words after it are that command line. argparse cannot take options after a positional and a
    remainder too (`import NAME --replace -- vllm serve ...` left the remainder unrecognized)."""
    if "--" in argv:
        at = argv.index("--")
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # a usage error is said once, by the whole parse below
                head = parser.parse_args(argv[:at])
        except SystemExit:
            head = None
        if head is not None and hasattr(head, "command_line"):
            head.command_line = argv[at + 1 :]
            return head
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    wants_json = "--json" in argv
    try:
        args = _parse(parser, argv)
    except SystemExit as exc:  # argparse: --help exits 0, usage errors exit 2 (having said why on stderr)
        code = int(exc.code or 0)
        if wants_json and code:
            _json_error("bad usage: see the message on stderr and `rigctl COMMAND --help`", code)
        return code
    handler = getattr(args, "handler", None)
    if args.remote_rig:  # checked here as a usage; run there
        from rigctl.cli.remote import run_on_rig

        handler = run_on_rig(argv)
    elif handler is None:  # no subcommand: the TUI
        from rigctl.cli.tui import run_tui

        handler = run_tui
    try:
        return int(handler(args))
    except RigctlError as exc:
        print(f"rigctl: {printable(str(exc))}", file=sys.stderr)
        if getattr(args, "json", False):
            _json_error(printable(str(exc)), int(exc.exit_code))
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("rigctl: interrupted", file=sys.stderr)
        if getattr(args, "json", False):
            _json_error("interrupted", int(ExitCode.FAILURE))
        return int(ExitCode.FAILURE)
    except BrokenPipeError:  # `rigctl gpus --watch | head`
        sys.stderr.close()
        return int(ExitCode.OK)


def _json_error(message: str, code: int) -> None:
    """A --json command's every outcome is one JSON object on stdout: a refusal or a usage error too."""
    try:
        common.print_json({"error": message, "exit_code": code})
    except BrokenPipeError:
        pass
