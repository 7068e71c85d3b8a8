"""The shape and range of a value read from outside (a model's config.json, a safetensors header,
a Prometheus answer, a state file), checked where it is read: a value rigctl uses is of the type
it expects and inside the range anything real has, or the reader stops with one line naming the
file and the field. Arithmetic downstream then never meets a zero head count, an infinity, a
400-digit number or a string where a count belongs."""

from __future__ import annotations

import math
from typing import Any

from rigctl.errors import BadInputError


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def whole(raw: dict[str, Any], key: str, where: str, lo: int, hi: int, default: int | None = None, what: str = "") -> int:
    """raw[key] as a whole number in [lo, hi]; `default` when absent or null (None: it must be there)."""
    value = raw.get(key)
    if value is None:
        value = default
    name = f"{what}.{key}" if what else key
    if value is None:
        raise BadInputError(f"{where}: {name} is missing; it must be a whole number")
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer() and lo <= value <= hi:
            return int(value)  # 4096.0 is a count written by a tool that writes floats
        raise BadInputError(f"{where}: {name} is {_show(value)}; it must be a whole number")
    if not lo <= value <= hi:
        raise BadInputError(f"{where}: {name} is {_show(value)}; it must be between {lo:,} and {hi:,}")
    return value


def optional_whole(raw: dict[str, Any], key: str, where: str, lo: int, hi: int, what: str = "") -> int | None:
    """whole(), or None when the key is absent or null."""
    return None if raw.get(key) is None else whole(raw, key, where, lo, hi, what=what)


def real(value: Any, where: str, name: str, lo: float = -math.inf, hi: float = math.inf) -> float:
    """A finite number in [lo, hi] (an int is a number too; a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInputError(f"{where}: {name} is {_show(value)}; it must be a number")
    number = float(value) if not isinstance(value, int) or abs(value) < 2**63 else math.inf
    if not math.isfinite(number) or not lo <= number <= hi:
        raise BadInputError(
            f"{where}: {name} is {_show(value)}; it must be a finite number"
            + (f" between {lo:g} and {hi:g}" if math.isfinite(lo) or math.isfinite(hi) else "")
        )
    return number


def text(raw: dict[str, Any], key: str, where: str, default: str = "", limit: int = 200, what: str = "") -> str:
    """raw[key] as a string of at most `limit` characters; `default` when absent or null."""
    value = raw.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise BadInputError(f"{where}: {what + '.' if what else ''}{key} is {_show(value)}; it must be a string")
    if len(value) > limit:
        raise BadInputError(
            f"{where}: {what + '.' if what else ''}{key} is {len(value):,} characters long; at most {limit:,} are expected"
        )
    return value


def mapping(value: Any, where: str, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadInputError(f"{where}: {name} is {_show(value)}; it must be a JSON object")
    return value


def sequence(value: Any, where: str, name: str, limit: int = 100_000) -> list[Any]:
    if not isinstance(value, list):
        raise BadInputError(f"{where}: {name} is {_show(value)}; it must be a list")
    if len(value) > limit:
        raise BadInputError(f"{where}: {name} has {len(value):,} entries; at most {limit:,} are expected")
    return value
