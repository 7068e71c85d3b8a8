"""The rule of each outside input, declared once, with its message in the input's own unit.

A key read in two places has one rule: config.toml's [verify] and a profile's [verify] both take
`[verify] min_acceptance` by `config.RULES["verify_min_acceptance"]`, a flag that stands for a
key (`watch --interval` for `[record] interval`) by the key's rule. A rule parses a value as TOML
or JSON gives it (a bool is never a number) and either returns it, converted, or raises
RuleError with what the value must be; the caller prefixes where (`file:line: table.key: `).

Seconds, Fraction, Count, Amount, Flag, Text, Choice, Url and Command are the shared types. Plain
classes, not dataclasses: `rigctl status` imports them, and a dataclass is built at import (this
module took 6.7 ms to import as nine dataclasses, 1.7 ms as it is, on the 2-core VM beside a
test run: timeit of a fresh import, 50 times)."""

from __future__ import annotations

import math
import shlex


class RuleError(ValueError):
    """What a value must be, in its unit: `must be a number of seconds from 0.5 to 3,600`."""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _shown(bound: float) -> str:
    return f"{bound:,.0f}" if bound == int(bound) else f"{bound:g}"


class Rule:
    __slots__ = ()

    def parse(self, value: object) -> object:
        raise NotImplementedError

    def accepts(self, value: object) -> bool:
        try:
            self.parse(value)
        except RuleError:
            return False
        return True


class Seconds(Rule):
    """A duration: at least `low` (more than it when `positive`), at most `high`."""

    __slots__ = ("high", "low", "positive")

    def __init__(self, low: float = 0.0, high: float = math.inf, positive: bool = False) -> None:
        self.low = low
        self.high = high
        self.positive = positive

    def parse(self, value: object) -> float:
        number = _number(value)
        if number is None or number < self.low or (self.positive and number <= self.low) or number > self.high:
            raise RuleError(f"must be {self.describe()}")
        return number

    def describe(self) -> str:
        if self.high < math.inf and (self.low or not self.positive):
            return f"a number of seconds from {_shown(self.low)} to {_shown(self.high)}"
        if self.high < math.inf:
            return f"a positive number of seconds, at most {_shown(self.high)}"
        if self.positive:
            return "a positive number of seconds"
        return "a non-negative number of seconds" if not self.low else f"a number of seconds of at least {_shown(self.low)}"


class Fraction(Rule):
    """A share, 0 to 1: `of` says of what, `example` a value an owner would write."""

    __slots__ = ("example", "of")

    def __init__(self, of: str, example: str = "0.2") -> None:
        self.of = of
        self.example = example

    def parse(self, value: object) -> float:
        number = _number(value)
        if number is None or not 0 <= number <= 1:
            raise RuleError(f"must be a share of {self.of}, from 0 to 1 (e.g. {self.example})")
        return number


class Count(Rule):
    """A whole number of `unit`, from `low` to `high`."""

    __slots__ = ("high", "low", "unit")

    def __init__(self, unit: str, low: int = 0, high: int = 2**40) -> None:
        self.unit = unit
        self.low = low
        self.high = high

    def parse(self, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not self.low <= value <= self.high:
            bounded = (
                f" from {self.low:,} to {self.high:,}" if self.high < 2**40 else (f" of at least {self.low:,}" if self.low else "")
            )
            raise RuleError(f"must be a whole number of {self.unit}{bounded}")
        return value

    def _bounds(self) -> str:
        if self.high < 2**40:
            return f" from {self.low:,} to {self.high:,}"
        return f" of at least {self.low:,}" if self.low else ""


class Amount(Rule):
    """A non-negative number of `unit` that need not be whole (tokens averaged, a rate)."""

    __slots__ = ("unit",)

    def __init__(self, unit: str) -> None:
        self.unit = unit

    def parse(self, value: object) -> float:
        number = _number(value)
        if number is None or number < 0:
            raise RuleError(f"must be a non-negative number of {self.unit}")
        return number


class Flag(Rule):
    __slots__ = ()

    def parse(self, value: object) -> bool:
        if not isinstance(value, bool):
            raise RuleError("must be true or false")
        return value


class Text(Rule):
    """A string; `what` names it in the message ("the path of a JSONL file")."""

    __slots__ = ("what",)

    def __init__(self, what: str = "a string") -> None:
        self.what = what

    def parse(self, value: object) -> str:
        if not isinstance(value, str):
            raise RuleError(f"must be {self.what}")
        return value


class Choice(Rule):
    __slots__ = ("choices",)

    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices

    def parse(self, value: object) -> str:
        if not isinstance(value, str):
            raise RuleError(f"must be one of {', '.join(self.choices)}")
        if value not in self.choices:
            raise RuleError(f"{value!r} is not one of {', '.join(self.choices)}")
        return value


class Url(Rule):
    __slots__ = ("example",)

    def __init__(self, example: str = "http://127.0.0.1:9090") -> None:
        self.example = example

    def parse(self, value: object) -> str:
        if not isinstance(value, str) or (value and not value.startswith(("http://", "https://"))):
            raise RuleError(f'must be an http(s) URL, e.g. "{self.example}"')
        return value


class Command(Rule):
    """An argv: a list of non-empty strings. `line_ok`: a string is split as a shell would split
    its words (never run by one); otherwise a string is refused (a command run for every alert,
    maybe as root, is never a line a shell would read)."""

    __slots__ = ("empty_ok", "example", "line_ok")

    def __init__(self, example: str = '["/opt/vllm/bin/vllm"]', line_ok: bool = True, empty_ok: bool = False) -> None:
        self.example = example
        self.line_ok = line_ok
        self.empty_ok = empty_ok

    def parse(self, value: object) -> tuple[str, ...]:
        if isinstance(value, str) and self.line_ok:
            try:
                value = shlex.split(value)
            except ValueError:
                value = None
        if not isinstance(value, list) or not (value or self.empty_ok) or not all(isinstance(v, str) and v for v in value):
            never = ", never a shell line" if not self.line_ok else ""
            raise RuleError(f"must be a command as a list of strings{never}, e.g. {self.example}")
        return tuple(value)
