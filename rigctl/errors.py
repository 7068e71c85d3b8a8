"""Errors that reach the user, and the exit codes that scripts rely on."""

from __future__ import annotations

import enum
import errno


class ExitCode(enum.IntEnum):
    """Process exit codes; part of the CLI's contract (docs/guide/commands.md, exit codes)."""

    OK = 0
    FAILURE = 1
    BAD_INPUT = 2
    ROLLED_BACK = 3
    ROLLBACK_FAILED = 4
    REJECTED = 5  # rigctl bench: the candidate did not pass its gate
    INCONCLUSIVE = 6  # rigctl bench: the controls disagree, or the run cannot decide
    DOWN = 7  # rigctl status --check: nothing serves (gone, not answering, switching, never started)
    DEGRADED = 8  # rigctl status --check: it serves, but an alert fires (stalled, KV full, hit rate fell)
    BENCHING = 9  # rigctl status --check: a bench holds the rig; its arms switch profiles (nothing to page for)


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(9), *range(11, 32), 127]}


def printable(text: str) -> str:
    """`text` with every control character but the line break escaped: a name read from a file (a
    carriage return in an `extends`, an escape sequence in a served name) cannot rewrite the line
    it is shown on, nor split one message into two."""
    return text.translate(_CONTROL)


def one_line(text: str) -> str:
    """printable(), and a line break shown as \\n: for what must stay one line."""
    return printable(text).replace("\n", "\\n")


class RigctlError(Exception):
    """An error with a message fit to show as one line, and its exit code."""

    exit_code: ExitCode = ExitCode.FAILURE


class BadInputError(RigctlError):
    """The user's input (a flag, a file, a name) is wrong; nothing was changed."""

    exit_code = ExitCode.BAD_INPUT


class NoDriverError(RigctlError):
    """NVML cannot be used on this machine (no library, no driver, or a mismatch)."""

    exit_code = ExitCode.FAILURE


class StopFailed(RigctlError):
    """A server did not go away when told to (stuck in the driver, or not rigctl's to stop)."""


class UnsafePath(RigctlError, OSError):
    """A path in rigctl's own dirs that is not what rigctl made there (a symbolic link, a FIFO, a
    directory where a file belongs): refused, never followed. An OSError too, so every place that
    already says a failed write in one line says this one."""

    def __init__(self, path: object, why: str) -> None:
        OSError.__init__(self, errno.ELOOP, why, str(path))
        self.text = f"{path}: {why}"

    def __str__(self) -> str:
        return self.text
