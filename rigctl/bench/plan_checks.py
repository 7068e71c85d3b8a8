"""Typed values read out of a bench plan's TOML tables, each mistake noted with its file, line and
key (rigctl/toml_lines.py finds the line), so a bad plan is told all at once (plan_file.py)."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from rigctl.toml_lines import key_lines, line_of


class PlanChecker:
    """Reads typed values out of the plan's tables, noting each mistake with its line."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = key_lines(text)
        self.problems: list[str] = []

    def problem(self, where: tuple[str, ...], message: str) -> None:
        line = line_of(self.lines, *where)
        key = ".".join(p for p in where if not p.isdigit()) if where else ""
        head = f"{self.path}:{line}" if line else str(self.path)
        self.problems.append(f"{head}: {key}: {message}" if key else f"{head}: {message}")

    def unknown(self, table: dict[str, Any], known: tuple[str, ...], where: tuple[str, ...]) -> None:
        for key in table:
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                self.problem(
                    (*where, key), "unknown key" + (f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})")
                )

    def text(
        self, table: dict[str, Any], key: str, where: tuple[str, ...], default: str | None = None, choices: tuple[str, ...] = ()
    ) -> str | None:
        value = table.get(key, default)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            self.problem((*where, key), f"must be a non-empty string, not {value!r}")
            return None
        if choices and value not in choices:
            close = difflib.get_close_matches(value, choices, n=1)
            self.problem(
                (*where, key), f"{value!r} is not one of {', '.join(choices)}" + (f"; did you mean {close[0]!r}?" if close else "")
            )
            return None
        return value

    def whole(self, table: dict[str, Any], key: str, where: tuple[str, ...], default: int | None, minimum: int) -> int | None:
        value = table.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem((*where, key), f"must be a whole number, not {value!r}")
            return None
        if value < minimum:
            self.problem((*where, key), f"must be at least {minimum}, not {value}")
            return None
        return value

    def real(
        self,
        table: dict[str, Any],
        key: str,
        where: tuple[str, ...],
        default: float | None,
        minimum: float = 0.0,
        above: bool = True,
        maximum: float | None = None,
    ) -> float | None:
        value = table.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problem((*where, key), f"must be a number, not {value!r}")
            return None
        if (value <= minimum if above else value < minimum) or (maximum is not None and value > maximum):
            bound = f"above {minimum:g}" if above else f"at least {minimum:g}"
            self.problem((*where, key), f"must be {bound}" + (f" and at most {maximum:g}" if maximum else "") + f", not {value:g}")
            return None
        return float(value)

    def table(self, data: dict[str, Any], key: str, where: tuple[str, ...] = ()) -> dict[str, Any] | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            self.problem((*where, key), f"must be a table ([{key}]), not {value!r}")
            return None
        return value
