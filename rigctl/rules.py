"""The rule of each outside input, declared once, with its message in the input's own unit.

Every value rigctl reads from outside passes one of these rules: config.toml and the profiles'
[verify] and [rigctl] tables (config.RULES), a profile's [vllm] ranges, a bench plan's keys
(bench/plan_checks.py), a model's config.json (vllm/model.py, by `take`), and rigctl's own state
files (jsonio.build: a field's rule is declared in its metadata, else follows from its type,
`of_type`). A key read in two places has one rule: config.toml's [verify] and a profile's
[verify] both take `min_acceptance` by `config.RULES["verify_min_acceptance"]`; a flag that
stands for a key (`watch --interval` for `[record] interval`) by the key's rule.

A rule parses a value as TOML or JSON gives it (a bool is never a number) and either returns it,
converted, or raises RuleError with what the value must be ("must be a whole number of requests of
at least 1"); the caller prefixes where (`file:line: table.key: `) and, by `complaint`, what it was.

Plain classes, not dataclasses: `rigctl status` imports them, and a dataclass is built at import
(this module took 6.7 ms to import as nine dataclasses, 1.7 ms as plain classes, on the 2-core VM
beside a test run: timeit of a fresh import, 50 times). msgspec's Structs were the other way the
issue named; see docs/guide/costs.md for why they were not taken."""

from __future__ import annotations

import math
import shlex
from typing import Any

from rigctl.errors import BadInputError


class RuleError(ValueError):
    """What a value must be, in its unit: `must be a number of seconds from 0.5 to 3,600`; `hint`,
    a near miss the value may have meant (`; did you mean 'poisson'?`), said after the value."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and abs(value) >= 2**1023:  # an int no float holds (JSON's 400-digit number)
        return None
    return float(value) if math.isfinite(value) else None


def _shown(bound: float) -> str:
    return f"{bound:,.0f}" if bound == int(bound) else f"{bound:g}"


def shown(value: object) -> str:
    """A value as a message quotes it: its repr, cut at 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def complaint(error: RuleError, value: object) -> str:
    """`must be ..., not 'x'`: what the value must be, what it was, and what it may have meant."""
    return f"{error}, not {shown(value)}{error.hint}"


class Rule:
    __slots__ = ()

    def parse(self, value: object) -> Any:
        raise NotImplementedError

    def accepts(self, value: object) -> bool:
        try:
            self.parse(value)
        except RuleError:
            return False
        return True

    def needs(self) -> str:
        """What a value must be ("must be ..."), said where the value is missing."""
        try:
            self.parse(_NOTHING)
        except RuleError as exc:
            return str(exc)
        return "must be given"


_NOTHING = object()  # no rule but Anything accepts it: Rule.needs reads a rule's message from it


class Number(Rule):
    """A finite number of `unit`: at least `low` (more than it when `positive`), at most `high`."""

    __slots__ = ("high", "low", "positive", "unit")

    def __init__(self, unit: str = "", low: float = -math.inf, high: float = math.inf, positive: bool = False) -> None:
        self.unit = unit
        self.low = low
        self.high = high
        self.positive = positive

    def parse(self, value: object) -> float:
        number = _number(value)
        if number is None or number < self.low or (self.positive and number <= self.low) or number > self.high:
            raise RuleError(f"must be {self.describe()}")
        return number

    def describe(self) -> str:
        of = f" of {self.unit}" if self.unit else ""
        low, high = math.isfinite(self.low), math.isfinite(self.high)
        if low and high and self.positive and not self.low:
            return f"a positive number{of}, at most {_shown(self.high)}"
        if low and high:
            above = "above" if self.positive else "from"
            return f"a number{of} {above} {_shown(self.low)} to {_shown(self.high)}"
        if low and self.positive:
            return f"a positive number{of}" if not self.low else f"a number{of} above {_shown(self.low)}"
        if low:
            return f"a non-negative number{of}" if not self.low else f"a number{of} of at least {_shown(self.low)}"
        if high:
            return f"a number{of} of at most {_shown(self.high)}"
        return f"a finite number{of}" if not of else f"a number{of}"


class Seconds(Number):
    """A duration: at least `low` (more than it when `positive`), at most `high`."""

    __slots__ = ()

    def __init__(self, low: float = 0.0, high: float = math.inf, positive: bool = False) -> None:
        super().__init__("seconds", low, high, positive)


class Amount(Number):
    """A non-negative number of `unit` that need not be whole (tokens averaged, a rate)."""

    __slots__ = ()

    def __init__(self, unit: str, positive: bool = False) -> None:
        super().__init__(unit, 0.0, math.inf, positive)


class Fraction(Rule):
    """A share, 0 to 1: `of` says of what, `example` a value an owner would write."""

    __slots__ = ("example", "of", "positive")

    def __init__(self, of: str, example: str = "0.2", positive: bool = False) -> None:
        self.of = of
        self.example = example
        self.positive = positive

    def parse(self, value: object) -> float:
        number = _number(value)
        if number is None or not 0 <= number <= 1 or (self.positive and not number):
            bounds = "above 0, at most 1" if self.positive else "from 0 to 1"
            raise RuleError(f"must be a share of {self.of}, {bounds} (e.g. {self.example})")
        return number


BEYOND_ANY = 2**40  # a count no owner's value reaches (a trillion tokens): the bound a message leaves unsaid


class Count(Rule):
    """A whole number of `unit` from `low` to `high` (None: unbounded; by default BEYOND_ANY, so a
    2**50 in a config is refused, not carried into arithmetic). A float that is whole (4096.0,
    written by a tool that writes floats) is the count it holds."""

    __slots__ = ("high", "low", "unit")

    def __init__(self, unit: str = "", low: int | None = 0, high: int | None = BEYOND_ANY) -> None:
        self.unit = unit
        self.low = low
        self.high = high

    def parse(self, value: object) -> int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or (self.low is not None and value < self.low)
            or (self.high is not None and value > self.high)
        ):
            beyond = self.high == BEYOND_ANY and isinstance(value, int) and not isinstance(value, bool) and value > self.high
            raise RuleError(f"must be {self.describe()}" + (f", at most {BEYOND_ANY:,}" if beyond else ""))
        return value

    def describe(self) -> str:
        of = f" of {self.unit}" if self.unit else ""
        if self.low is not None and self.high is not None and self.high != BEYOND_ANY:
            return f"a whole number{of} from {self.low:,} to {self.high:,}"
        if self.low is not None:
            return f"a whole number{of} of at least {self.low:,}" if self.low else f"a non-negative whole number{of}"
        return f"a whole number{of}" + (f" of at most {self.high:,}" if self.high not in (None, BEYOND_ANY) else "")


class Port(Count):
    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("", 1, 65535)

    def describe(self) -> str:
        return "a TCP port, from 1 to 65,535"


PORT = Port()


class Listen(Rule):
    """HOST:PORT ([v6]:PORT for IPv6) where a service listens; `any_port`: port 0 (the kernel's
    pick) too; `empty_ok`: "" (the caller's default) too."""

    __slots__ = ("any_port", "empty_ok")

    def __init__(self, any_port: bool = False, empty_ok: bool = False) -> None:
        self.any_port = any_port
        self.empty_ok = empty_ok

    def split(self, value: object) -> tuple[str, int]:
        if isinstance(value, str):
            host, sep, port = value.rpartition(":")
            host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
            if sep and host and port.isdigit() and (0 if self.any_port else 1) <= int(port) < 65536:
                return host, int(port)
        raise RuleError("must be HOST:PORT (e.g. 127.0.0.1:9477)")

    def parse(self, value: object) -> str:
        if value == "" and self.empty_ok:
            return ""
        self.split(value)
        return str(value)


class Flag(Rule):
    __slots__ = ()

    def parse(self, value: object) -> bool:
        if not isinstance(value, bool):
            raise RuleError("must be true or false")
        return value


class Text(Rule):
    """A string; `what` names it in the message ("the path of a JSONL file"); `limit` its length;
    `filled`: not empty nor only spaces."""

    __slots__ = ("filled", "limit", "what")

    def __init__(self, what: str = "a string", limit: int | None = None, filled: bool = False) -> None:
        self.what = what
        self.limit = limit
        self.filled = filled

    def parse(self, value: object) -> str:
        if not isinstance(value, str) or (self.filled and not value.strip()):
            raise RuleError(f"must be {'a non-empty string' if self.filled and self.what == 'a string' else self.what}")
        if self.limit is not None and len(value) > self.limit:
            raise RuleError(f"must be {self.what} of at most {self.limit:,} characters (this one has {len(value):,})")
        return value


class Choice(Rule):
    """One word of `choices`; a near miss is named ("did you mean 'poisson'?")."""

    __slots__ = ("choices",)

    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices

    def parse(self, value: object) -> str:
        if not isinstance(value, str):
            raise RuleError(f"must be one of {', '.join(self.choices)}")
        if value not in self.choices:
            import difflib  # only on a mistake: `rigctl status` never pays for it

            close = difflib.get_close_matches(value, self.choices, n=1)
            raise RuleError(f"must be one of {', '.join(self.choices)}", f"; did you mean {close[0]!r}?" if close else "")
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


REQUIRED: Any = _NOTHING  # `take`'s default: the key must be there


def take(raw: dict[str, Any], key: str, rule: Rule, where: str, default: Any = REQUIRED, what: str = "") -> Any:
    """raw[key] by `rule`; `default` when absent or null. BadInputError `where: what.key: must be
    ..., not X` (or `... is missing; it must be ...`) otherwise."""
    name = f"{what}.{key}" if what else key
    value = raw.get(key)
    if value is None:
        if default is REQUIRED:
            raise BadInputError(f"{where}: {name} is missing; it {rule.needs()}")
        return default
    try:
        return rule.parse(value)
    except RuleError as exc:
        raise BadInputError(f"{where}: {name}: {complaint(exc, value)}") from None
