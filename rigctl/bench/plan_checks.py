"""Values read out of a bench plan's TOML tables, each by its rule (rigctl/rules.py, the one every
outside input passes), each mistake noted with its file, line and key (rigctl/toml_lines.py finds
the line), so a bad plan is told all at once (plan_file.py)."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from rigctl.rule_compounds import Table
from rigctl.rules import Choice, Rule, RuleError, Text, complaint
from rigctl.toml_lines import key_lines, line_of

NAME = Text(filled=True)


class PlanChecker:
    """Reads values out of the plan's tables by their rules, noting each mistake with its line."""

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

    def value(self, table: dict[str, Any], key: str, where: tuple[str, ...], rule: Rule, default: Any = None) -> Any:
        """table[key] (else `default`) by `rule`; None, with the mistake noted, when it refuses it."""
        raw = table.get(key, default)
        if raw is None:
            return None
        try:
            return rule.parse(raw)
        except RuleError as exc:
            self.problem((*where, key), complaint(exc, raw))
            return None

    def text(
        self, table: dict[str, Any], key: str, where: tuple[str, ...], default: str | None = None, choices: tuple[str, ...] = ()
    ) -> str | None:
        found: str | None = self.value(table, key, where, Choice(choices) if choices else NAME, default)
        return found

    def table(self, data: dict[str, Any], key: str, where: tuple[str, ...] = ()) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.value(data, key, where, Table(f"a table ([{key}])"))
        return found
