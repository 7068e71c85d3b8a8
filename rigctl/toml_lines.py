"""Where each key of a TOML file is: (table, ..., key) -> line number.

tomllib gives values but no positions; errors must name the line. A line scanner is
enough for the shapes profiles take: [tables], dotted keys, inline tables.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r'^\s*((?:"[^"]*"|\'[^\']*\'|[A-Za-z0-9_-]+)(?:\s*\.\s*(?:"[^"]*"|\'[^\']*\'|[A-Za-z0-9_-]+))*)\s*=')
_INLINE_KEY = re.compile(r'[{,]\s*("[^"]*"|\'[^\']*\'|[A-Za-z0-9_-]+)\s*=')


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(p.strip().strip('"').strip("'") for p in re.findall(r'"[^"]*"|\'[^\']*\'|[^.]+', dotted))


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Each element of an array of tables ([[gate.guard]]) also gets its index as a part:
    ("gate", "guard", "1", "metric") is the second guard's metric."""
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    elements: dict[tuple[str, ...], int] = {}
    in_multiline = False
    for number, line in enumerate(text.splitlines(), start=1):
        if in_multiline:
            if line.count('"""') % 2 or line.count("'''") % 2:
                in_multiline = False
            continue
        header = _HEADER.match(line)
        if header:
            table = _parts(header.group(2))
            lines.setdefault(table, number)
            if header.group(1) == "[[":
                index = elements.get(table, -1) + 1
                elements[table] = index
                table = (*table, str(index))
                lines[table] = number
            continue
        key = _KEY.match(line)
        if not key:
            continue
        path = table + _parts(key.group(1))
        lines.setdefault(path, number)
        rest = line[key.end() :]
        if rest.count('"""') % 2 or rest.count("'''") % 2:
            in_multiline = True
        if "{" in rest:  # inline table: its keys live on this line too
            for inner in _INLINE_KEY.finditer(rest):
                lines.setdefault(path + _parts(inner.group(1)), number)
    return lines


def line_of(lines: dict[tuple[str, ...], int], *path: str) -> int | None:
    """The line of the deepest known prefix of `path`."""
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None
