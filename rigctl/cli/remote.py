"""`rigctl --rig NAME COMMAND ...`: the command run by that rig's rigctl over SSH, its output
shown here as it comes (a switch's progress line by line) and its exit code returned as ours."""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable

from rigctl.config import load_settings, remote_rig
from rigctl.errors import BadInputError, ExitCode
from rigctl.remote.ssh import run_remote

CHANGES_WHAT_SERVES = ("switch", "start", "restart", "stop")


def remote_words(argv: list[str]) -> list[str]:
    """`argv` without its first --rig NAME (or --rig=NAME), the one before the command: what the
    rig's rigctl is asked (a later --rig is the command's own, e.g. the exporter's label)."""
    for i, word in enumerate(argv):
        if word == "--rig":
            return argv[:i] + argv[i + 2 :]
        if word.startswith("--rig="):
            return argv[:i] + argv[i + 1 :]
    return list(argv)


def run_on_rig(argv: list[str]) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        if args.command in (None, "demo"):
            raise BadInputError(
                f"--rig runs a command there, not the TUI: give a command (rigctl --rig {args.remote_rig} status), "
                f"or open that rig's TUI with `ssh -t` to it"
            )
        rig = remote_rig(load_settings(), args.remote_rig)
        words = remote_words(argv)

        def out(raw: bytes) -> None:
            sys.stdout.buffer.write(raw)
            sys.stdout.buffer.flush()  # a switch's progress shows as it happens, not at the end

        def err(raw: bytes) -> None:
            sys.stderr.buffer.write(raw)
            sys.stderr.buffer.flush()

        # Ctrl-C is ours to handle even where it came in ignored (a parent that ignores SIGINT hands
        # that on): here it means stop watching, and ssh is ended by run_remote on the way out
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            done = run_remote(
                rig,
                words,
                out,
                err,
                columns=shutil.get_terminal_size().columns,
                stdin=None if "-" in words else subprocess.DEVNULL,
            )
        except KeyboardInterrupt:
            if args.command in CHANGES_WHAT_SERVES:  # nothing here can stop it there: say so
                print(
                    f"rigctl: stopped watching; the {args.command} goes on on rig {rig.name} (rigctl --rig {rig.name} status)",
                    file=sys.stderr,
                )
                return int(ExitCode.FAILURE)
            raise
        finally:
            signal.signal(signal.SIGINT, previous)
        return done.code

    return handler
