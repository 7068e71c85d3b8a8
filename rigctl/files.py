"""How rigctl opens files: its own, and the ones it is given.

Its own (the state, cache and log dirs) are opened only as what rigctl made there: never through
a symbolic link (O_NOFOLLOW), only regular files. Some owners run rigctl as root under systemd; a
link planted in place of history.jsonl, rig.lock or the next server log would have root append
to, truncate or overwrite whatever it points at.

What it is given (a model's config.json and safetensors headers, a profile, a plan, a trace, a
saved scrape, a boot log) may be a link (the Hugging Face cache is made of them), but only to a
regular file: a FIFO would hang the read and /dev/zero would never end it. Every read is capped,
so a file of absurd size is refused in one line instead of filling memory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from rigctl.errors import BadInputError, UnsafePath
from rigctl.units import MIB

_NONBLOCK = os.O_NONBLOCK | os.O_CLOEXEC  # no effect on a regular file; a FIFO cannot hang the open


def open_own(path: Path, flags: int, mode: int = 0o600) -> int:
    """os.open for one of rigctl's own files: a link or anything but a regular file is UnsafePath."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | _NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno != errno.EEXIST and os.path.islink(path)):
            raise UnsafePath(path, "a symbolic link where rigctl keeps its own file; rigctl never opens one (remove it)") from None
        raise
    try:
        kind = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise UnsafePath(path, "not a regular file where rigctl keeps its own file (remove it)")
    return fd


def own_path_problem(path: Path, directory: bool = False) -> str | None:
    """Why rigctl would refuse to open one of its own paths (a link, or the wrong kind of file),
    or None (it is fine, or not there yet): asked before a switch stops anything."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    if stat.S_ISLNK(info.st_mode):
        kind = "files" if directory else "file"
        return f"{path}: a symbolic link where rigctl keeps its own {kind}; rigctl never opens one (remove it)"
    if directory and not stat.S_ISDIR(info.st_mode):
        return f"{path}: not a directory"
    if not directory and not stat.S_ISREG(info.st_mode):
        return f"{path}: not a regular file where rigctl keeps its own file (remove it)"
    return None


def _read_capped(fd: int, limit: int, expected: int = 0) -> bytes | None:
    """Up to `limit` bytes of fd; None when there are more. `expected`: the size the file says it
    has, read in one call where it can be (one buffer: a large file is not held twice while
    chunks are joined)."""
    want = min(limit, expected) + 1 if expected else MIB
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(want, limit + 1 - total))
        if not chunk:
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            return None


def read_own(path: Path, limit: int = 64 * MIB) -> bytes | None:
    """One of rigctl's own files, whole; None when there is none. UnsafePath for a link or a
    non-regular file, OSError for a failed read, ValueError when it is larger than `limit`."""
    try:
        fd = open_own(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        data = _read_capped(fd, limit)
    finally:
        os.close(fd)
    if data is None:
        raise ValueError(f"larger than {limit // MIB} MiB")
    return data


def describe_size(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit >= MIB else f"{limit // 1024} KiB"


def open_regular(path: Path | str, what: str = "file") -> tuple[int, os.stat_result]:
    """(a descriptor, its stat) of a file rigctl was given; BadInputError (one line naming the file)
    when it is missing, unreadable or not a regular file (a FIFO, a device, a directory). Opened
    non-blocking, so a FIFO cannot hang the open; the caller closes the descriptor."""
    path = Path(path)
    noun = what.split(" (")[0]
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK)
    except FileNotFoundError:
        raise BadInputError(f"{path}: no such {noun}") from None
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read the {noun}: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = (
            "a directory"
            if stat.S_ISDIR(info.st_mode)
            else "a FIFO"
            if stat.S_ISFIFO(info.st_mode)
            else "a device"
            if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
            else "not a regular file"
        )
        raise BadInputError(f"{path}: {kind}, not a {what} (rigctl reads regular files only)")
    return fd, info


def read_input(path: Path | str, limit: int, what: str = "file") -> bytes:
    """A file rigctl was given, whole: BadInputError (one line naming the file) when open_regular
    refuses it, it cannot be read, or it is larger than `limit`."""
    fd, info = open_regular(path, what)
    try:
        if info.st_size > limit:
            raise BadInputError(
                f"{path}: {info.st_size / MIB:,.1f} MiB, larger than any {what} rigctl reads ({describe_size(limit)})"
            )
        try:
            data = _read_capped(fd, limit, info.st_size)
        except OSError as exc:
            raise BadInputError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
        if data is None:
            raise BadInputError(f"{path}: larger than any {what} rigctl reads ({describe_size(limit)})")
        return data
    finally:
        os.close(fd)


LINE_LIMIT = 64 * 1024  # a log line longer than this is cut: no vLLM line is, and no reader needs more


def bounded_lines(handle: IO[str], line_limit: int = LINE_LIMIT) -> Iterator[str]:
    """The lines of a text stream, each cut at `line_limit` characters: a log of any length is read
    in bounded memory, a file of one endless line included."""
    while True:
        line = handle.readline(line_limit)
        if not line:
            return
        if len(line) >= line_limit and not line.endswith("\n"):
            while (rest := handle.readline(line_limit)) and not rest.endswith("\n"):
                pass  # the rest of an overlong line is skipped, a piece at a time
        yield line


@contextlib.contextmanager
def open_input(path: Path | str, what: str = "file") -> Iterator[IO[str]]:
    """A file rigctl was given, open as text to be streamed (a log of any size): BadInputError for
    one that is missing or not a regular file (a FIFO would hang, a device never end)."""
    fd, _ = open_regular(path, what)
    os.set_blocking(fd, True)
    with open(fd, encoding="utf-8", errors="replace") as handle:
        try:
            yield handle
        except OSError as exc:
            raise BadInputError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None


def read_input_text(path: Path | str, limit: int, what: str = "file") -> str:
    """read_input as text (UTF-8; a byte that is not UTF-8 is one line naming the file)."""
    data = read_input(path, limit, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{path}: not UTF-8 text (byte {exc.start}); not a {what}") from None
