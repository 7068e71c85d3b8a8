"""`rigctl --rig NAME COMMAND ...`: the command run by that rig's rigctl over SSH, its output
shown here as it comes (a switch's progress line by line) and its exit code returned as ours."""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import BinaryIO

from rigctl.config import load_settings, remote_rig
from rigctl.errors import BadInputError, ExitCode, RigctlError
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


class Relay:
    """The rig's stdout and stderr written here as they come. A connection cut mid-line leaves the
    rig's last line open (at EOF ssh hands over what it had). Both streams are most often one
    terminal, so a line left open on one is ended before the other writes (ssh's own "Connection
    ... closed" comes on stderr, in either order with stdout's tail), and `end_line` ends it before
    rigctl's own one-line error: each starts a line of its own, never the tail of the rig's."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # stderr is relayed from run_remote's reader thread
        self.open_line: BinaryIO | None = None

    def write(self, stream: BinaryIO, raw: bytes) -> None:
        with self.lock:
            if raw and self.open_line is not None and self.open_line is not stream:
                self._end_open_line()
            stream.write(raw)
            stream.flush()  # a switch's progress shows as it happens, not at the end
            if raw:
                self.open_line = None if raw.endswith(b"\n") else stream

    def end_line(self) -> None:
        with self.lock:
            self._end_open_line()

    def _end_open_line(self) -> None:
        if self.open_line is not None:
            self.open_line.write(b"\n")
            self.open_line.flush()
            self.open_line = None


def run_on_rig(argv: list[str]) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        if args.command in (None, "demo"):
            raise BadInputError(
                f"--rig runs a command there, not the TUI: give a command (rigctl --rig {args.remote_rig} status), "
                f"or open that rig's TUI with `ssh -t` to it"
            )
        rig = remote_rig(load_settings(), args.remote_rig)
        words = remote_words(argv)

        relay = Relay()

        # Ctrl-C is ours to handle even where it came in ignored (a parent that ignores SIGINT hands
        # that on): here it means stop watching, and ssh is ended by run_remote on the way out
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            done = run_remote(
                rig,
                words,
                lambda raw: relay.write(sys.stdout.buffer, raw),
                lambda raw: relay.write(sys.stderr.buffer, raw),
                columns=shutil.get_terminal_size().columns,
                stdin=None if "-" in words else subprocess.DEVNULL,
            )
        except RigctlError:
            relay.end_line()
            raise
        except KeyboardInterrupt:
            relay.end_line()
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
