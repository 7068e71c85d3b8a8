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
from rigctl.rule_compounds import AnyOf, Anything, IsA, ListOf, Maybe, Null, Table
from rigctl.rules import Choice, Count, Flag, Number, Rule, RuleError, Text, complaint

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


def of_type(kind: Any) -> Rule:
    """The rule a field's type implies (rigctl/rules.py), where its dataclass declares none in the
    field's metadata (`field(metadata={"rule": Count("a TCP port", 1, 65535)})`)."""
    origin = typing.get_origin(kind)
    if kind is Any:
        return Anything()
    if origin in (typing.Union, types.UnionType):
        options = [k for k in typing.get_args(kind) if k is not type(None)]
        rule = of_type(options[0]) if len(options) == 1 else AnyOf(tuple(of_type(k) for k in options))
        return Maybe(rule) if len(options) < len(typing.get_args(kind)) else rule
    if kind is type(None):
        return Null()
    if origin is typing.Literal:  # a state's vocabulary: one of its words, nothing else
        return Choice(tuple(str(word) for word in typing.get_args(kind)))
    if kind is float:
        return Number()
    if kind is int:
        return Count(low=None, high=None)
    if kind is str:
        return Text()
    if kind is bool:
        return Flag()
    if origin in (tuple, list) or kind in (tuple, list):
        inner = typing.get_args(kind)
        return ListOf(of_type(inner[0]) if inner else Anything(), as_tuple=origin is tuple or kind is tuple)
    if origin is dict or kind is dict:
        return Table()
    return IsA(kind)


@functools.lru_cache(maxsize=64)
def _field_rules(cls: type) -> tuple[tuple[str, Rule, bool], ...]:
    """Each field's (name, rule, required); resolving annotations costs more than reading the file."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (
            f.name,
            f.metadata.get("rule") or of_type(hints[f.name]),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
    )


def build(cls: type[T], data: dict[str, Any], path: Path) -> T:
    """An instance of dataclass `cls` from `data`, each field by its rule: unknown keys are
    ignored, missing keys take their defaults, and a missing required key or a value its rule
    refuses is DamagedFile (`'since': must be a finite number, not 'yesterday'`)."""
    values: dict[str, Any] = {}
    for name, rule, required in _field_rules(cls):  # type: ignore[arg-type]  # a class is hashable; mypy misses it
        if name not in data:
            if required:
                raise DamagedFile(path, f"no {name!r}")
            continue
        try:
            values[name] = rule.parse(data[name])
        except RuleError as exc:
            raise DamagedFile(path, f"{name!r}: {complaint(exc, data[name])}") from None
    try:
        return cls(**values)
    except (ValueError, TypeError) as exc:  # a class's own range checks (a port of 70000, a pid of -5)
        raise DamagedFile(path, str(exc)) from None


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
