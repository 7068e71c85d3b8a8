"""Prometheus text exposition (0.0.4) -> samples, fast and exact enough for vLLM.

Tolerates # HELP / # TYPE, blank lines, escaped label values, NaN and +-Inf, timestamps,
and a truncated last line (reported, not fatal). `_created` series are dropped: they are
prometheus_client's companions, not measurements. Chosen over prometheus_client's parser
by measurement (benchmarks/bench_metrics_parse.py): same samples, several times faster.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

from rigctl.errors import RigctlError

Labels = tuple[tuple[str, str], ...]

_PAIR = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_UNESCAPE = re.compile(r"\\(.)")


class ExpositionError(RigctlError, ValueError):
    """Not a Prometheus text exposition (or nothing usable in it)."""


@dataclass
class Exposition:
    samples: dict[str, list[tuple[Labels, float]]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    errors: list[tuple[int, str]] = field(default_factory=list)  # (line number, the line)
    truncated: bool = False  # the text did not end with a newline: its last line may be cut

    def get(self, name: str) -> list[tuple[Labels, float]]:
        return self.samples.get(name, [])

    def count(self) -> int:
        return sum(len(v) for v in self.samples.values())


def _unescape(value: str) -> str:
    if "\\" not in value:
        return value
    return _UNESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


_LABEL_CACHE: dict[str, Labels | None] = {}  # scrapes repeat the same label sets second after second
_CACHE_LIMIT = 50_000


def _labels(text: str) -> Labels | None:
    cached = _LABEL_CACHE.get(text, _MISSING)
    if cached is not _MISSING:
        return cached  # type: ignore[return-value]
    if len(_LABEL_CACHE) >= _CACHE_LIMIT:
        _LABEL_CACHE.clear()
    parsed = _parse_labels(text)
    _LABEL_CACHE[text] = parsed
    return parsed


_MISSING = object()


def _parse_labels(text: str) -> Labels | None:
    pairs: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = _PAIR.match(text, position)
        if not match:
            return None if text[position:].strip() else tuple(pairs)
        pairs.append((match.group(1), _unescape(match.group(2))))
        position = match.end()
    return tuple(pairs)


BLOCK = 1 << 20  # characters split into lines at a time: a 40 MB exposition is never a list of all its lines
MAX_ERRORS = 100  # bad lines kept for the message; a file of garbage is not kept whole


def _lines(text: str) -> Iterator[str]:
    start, end_of_text = 0, len(text)
    while start < end_of_text:
        end = text.find("\n", min(end_of_text, start + BLOCK))
        end = end_of_text if end < 0 else end
        yield from text[start:end].split("\n")
        start = end + 1


def sample_lines(text: str) -> int:
    """How many lines of `text` would be samples (neither blank nor a comment)."""
    return sum(1 for line in _lines(text) if line.strip() and not line.startswith("#"))


def parse(text: str, keep_created: bool = False, names: Collection[str] | None = None) -> Exposition:
    """Every sample of `text` (or those of `names` only: the others are skipped before their
    labels are read); raises ExpositionError only when nothing in it parses."""
    out = Exposition()
    samples = out.samples
    out.truncated = bool(text) and not text.endswith("\n")
    for number, line in enumerate(_lines(text), start=1):
        if not line or line[0] == "#":
            if line.startswith("# TYPE "):
                parts = line.split(None, 3)
                if len(parts) == 4:
                    out.types[parts[2]] = parts[3].strip()
            continue
        brace = line.find("{")
        if names is not None and (line[:brace] if brace >= 0 else line.partition(" ")[0]) not in names:
            continue
        try:
            if brace < 0:
                name, _, rest = line.partition(" ")
                labels: Labels | None = ()
            else:
                # The value after the labels never holds "}", so the last one closes them,
                # even when a label value contains braces.
                close = line.rfind("}")
                if close < brace:
                    raise ValueError("unclosed labels")
                name = line[:brace]
                labels = _labels(line[brace + 1 : close])
                rest = line[close + 1 :]
            if labels is None or not name:
                raise ValueError("bad labels")
            value = float(rest.split()[0])
        except (ValueError, IndexError):
            if line.strip() and len(out.errors) < MAX_ERRORS:
                out.errors.append((number, line[:200]))
            continue
        if not keep_created and name.endswith("_created"):
            continue
        samples.setdefault(name, []).append((labels, value))
    if not samples and out.errors:
        number, line = out.errors[0]
        raise ExpositionError(f"not a Prometheus text exposition: line {number}: {line[:80]!r}")
    return out
