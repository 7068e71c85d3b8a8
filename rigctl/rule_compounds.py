"""Rules made of other rules (rigctl/rules.py holds the kinds of value and the base): a table, a
list of entries each by a rule, a value or null, the first of several, a rule and a test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rigctl.rules import _NOTHING, Rule, RuleError


class Table(Rule):
    """A TOML table or a JSON object."""

    __slots__ = ("what",)

    def __init__(self, what: str = "a table (a JSON object)") -> None:
        self.what = what

    def parse(self, value: object) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise RuleError(f"must be {self.what}")
        return value


class ListOf(Rule):
    """A list whose every entry passes `entry`, at most `limit` long; a tuple when `as_tuple`."""

    __slots__ = ("as_tuple", "entry", "limit", "what")

    def __init__(self, entry: Rule, what: str = "a list", limit: int = 100_000, as_tuple: bool = True) -> None:
        self.entry = entry
        self.what = what
        self.limit = limit
        self.as_tuple = as_tuple

    def parse(self, value: object) -> tuple[Any, ...] | list[Any]:
        if not isinstance(value, list):
            raise RuleError(f"must be {self.what}")
        if len(value) > self.limit:
            raise RuleError(f"must be {self.what} of at most {self.limit:,} entries (this one has {len(value):,})")
        entries = []
        for index, item in enumerate(value):
            try:
                entries.append(self.entry.parse(item))
            except RuleError as exc:
                raise RuleError(f"must be {self.what}: entry {index} {exc}") from None
        return tuple(entries) if self.as_tuple else entries


class Maybe(Rule):
    """`rule`, or null."""

    __slots__ = ("rule",)

    def __init__(self, rule: Rule) -> None:
        self.rule = rule

    def parse(self, value: object) -> Any:
        return None if value is None else self.rule.parse(value)

    def needs(self) -> str:
        return self.rule.needs() + " or null"


class AnyOf(Rule):
    """The first of `rules` that takes the value."""

    __slots__ = ("rules",)

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.rules = rules

    def parse(self, value: object) -> Any:
        for rule in self.rules:
            try:
                return rule.parse(value)
            except RuleError:
                continue
        raise RuleError("must be " + " or ".join(r.needs().removeprefix("must be ") for r in self.rules))


class Anything(Rule):
    __slots__ = ()

    def parse(self, value: object) -> Any:
        return value


class Null(Rule):
    __slots__ = ()

    def parse(self, value: object) -> None:
        if value is not None:
            raise RuleError("must be null")


class IsA(Rule):
    """A value of an outside class, as a reader built it (no JSON value is one)."""

    __slots__ = ("kind",)

    def __init__(self, kind: type) -> None:
        self.kind = kind

    def parse(self, value: object) -> Any:
        if not isinstance(value, self.kind):
            raise RuleError(f"must be {self.kind.__name__}")
        return value


class Shaped(Rule):
    """`base`, and then `test` on what it returned: `what` is what a value must be (a destination
    ssh takes, an environment variable's name)."""

    __slots__ = ("base", "test", "what")

    def __init__(self, base: Rule, test: Callable[[Any], bool], what: str) -> None:
        self.base = base
        self.test = test
        self.what = what

    def parse(self, value: object) -> Any:
        try:
            parsed = self.base.parse(value)
        except RuleError:
            parsed = _NOTHING
        if parsed is _NOTHING or not self.test(parsed):
            raise RuleError(f"must be {self.what}")
        return parsed
