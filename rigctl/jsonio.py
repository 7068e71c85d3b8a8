"""JSON in and out of rigctl's own files and outputs.

Out: strict JSON (a NaN or an infinity becomes null, never a bare `NaN` that `jq` rejects).
In: a state file is read into its dataclass with every field's type checked, so a damaged
or hand-edited file is reported as damaged (with its path), never a TypeError later.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from rigctl.errors import RigctlError, UnsafePath
from rigctl.files import open_own, read_own

T = TypeVar("T")


class DamagedFile(RigctlError):
    """One of rigctl's files exists but cannot be used as it is."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: damaged ({reason})")
        self.path = path
        self.reason = reason


def finite(value: Any) -> Any:
    """`value` with every non-finite float replaced by None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, indent: int | None = None, sort_keys: bool = False) -> str:
    return json.dumps(finite(value), indent=indent, sort_keys=sort_keys, allow_nan=False)


STATE_FILE_LIMIT = 1024 * 1024  # rigctl's state files are a few hundred bytes


def read_object(path: Path, limit: int = STATE_FILE_LIMIT) -> dict[str, Any] | None:
    """The JSON object in one of rigctl's own files; None when there is no file; DamagedFile
    otherwise (a link or a FIFO in its place, too large, not UTF-8, not JSON, not an object)."""
    text = read_text(path, limit)
    return None if text is None else parse_object(text, path)


def read_text(path: Path, limit: int = STATE_FILE_LIMIT) -> str | None:
    """One of rigctl's own files as text; None when there is none; DamagedFile when it cannot be read."""
    try:
        raw = read_own(path, limit)
        return None if raw is None else raw.decode("utf-8")
    except UnsafePath as exc:
        raise DamagedFile(path, exc.strerror or str(exc)) from exc
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DamagedFile(path, getattr(exc, "strerror", None) or str(exc)) from exc


def parse_object(text: str, path: Path) -> dict[str, Any]:
    """The JSON object `text` (read from `path`) holds; DamagedFile when it holds none."""
    if not text.strip():
        raise DamagedFile(path, "empty")
    try:
        data = loads_strict(text)
    except (ValueError, RecursionError) as exc:
        raise DamagedFile(path, f"not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise DamagedFile(path, f"a JSON {type(data).__name__}, not an object")
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_strict(text: str | bytes) -> Any:
    """json.loads as JSON is written: NaN and Infinity refused (Python's json takes them), a number
    too long to be one refused (ValueError), nesting too deep refused (RecursionError)."""
    return json.loads(text, parse_constant=_no_constant)


def _matches(value: Any, kind: Any) -> bool:
    origin = typing.get_origin(kind)
    if kind is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, k) for k in typing.get_args(kind))
    if kind is type(None):
        return value is None
    if origin is typing.Literal:  # a state's vocabulary: one of its words, nothing else
        return isinstance(value, str) and value in typing.get_args(kind)
    if kind is float:
        if isinstance(value, int) and not isinstance(value, bool):
            return abs(value) < 2**1023  # an int a float can hold
        return isinstance(value, float) and math.isfinite(value)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (tuple, list):
        inner = typing.get_args(kind)
        return isinstance(value, list) and all(_matches(v, inner[0]) for v in value) if inner else isinstance(value, list)
    if origin is dict:
        return isinstance(value, dict)
    return isinstance(value, kind)


@functools.lru_cache(maxsize=32)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)  # resolving annotations costs more than reading the file


def build(cls: type[T], data: dict[str, Any], path: Path) -> T:
    """An instance of dataclass `cls` from `data`: unknown keys are ignored, missing keys take
    their defaults, and a missing required key or a value of the wrong type is DamagedFile."""
    hints = _hints(cls)  # type: ignore[arg-type]  # a class is hashable; mypy's Hashable check misses it
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise DamagedFile(path, f"no {f.name!r}")
            continue
        value = data[f.name]
        if not _matches(value, hints[f.name]):
            raise DamagedFile(path, f"{f.name!r} is {json.dumps(value)[:40]}, not {_describe(hints[f.name])}")
        if isinstance(value, list) and _wants_tuple(hints[f.name]):
            value = tuple(value)
        values[f.name] = float(value) if hints[f.name] is float else value
    try:
        return cls(**values)
    except (ValueError, TypeError) as exc:  # a class's own range checks (a port of 70000, a pid of -5)
        raise DamagedFile(path, str(exc)) from None


def _wants_tuple(kind: Any) -> bool:
    if typing.get_origin(kind) is tuple:
        return True
    return typing.get_origin(kind) in (typing.Union, types.UnionType) and any(
        typing.get_origin(k) is tuple for k in typing.get_args(kind)
    )


def _describe(kind: Any) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", type(None): "null"}
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return " or ".join(_describe(k) for k in typing.get_args(kind))
    if typing.get_origin(kind) in (tuple, list):
        return "a list"
    if typing.get_origin(kind) is typing.Literal:
        return "one of " + ", ".join(json.dumps(word) for word in typing.get_args(kind))
    return names.get(kind, getattr(kind, "__name__", str(kind)))


def append_line(path: Path, value: dict[str, Any]) -> None:
    """One JSON object appended to a JSON-lines file of rigctl's own (0600): one write of one line
    with O_APPEND, so two writers never interleave, fsynced; a line cut short by a crash is never
    glued to the next one."""
    line = (dumps(value, sort_keys=True) + "\n").encode()
    fd = open_own(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_lines(path: Path, cls: type[T], limit: int) -> tuple[list[T], list[int]]:
    """The records of a JSON-lines file of rigctl's own, each checked as `cls`, and the 1-based
    numbers of the lines that are not one (skipped, for the caller to name). No file: none.
    DamagedFile when the file itself cannot be read (unsafe, too large)."""
    try:
        raw = read_own(path, limit)
    except (OSError, ValueError) as exc:
        raise DamagedFile(path, getattr(exc, "strerror", None) or str(exc)) from exc
    if raw is None:
        return [], []
    records: list[T] = []
    damaged: list[int] = []
    for number, line in enumerate(raw.decode(errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = loads_strict(line)
            if not isinstance(data, dict):
                raise ValueError("not an object")
            records.append(build(cls, data, path))
        except (ValueError, RecursionError, DamagedFile):
            damaged.append(number)
    return records, damaged
