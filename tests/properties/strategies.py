"""Hostile values as owners' files and endpoints can hold them: numbers no count has (zero,
negative, 400 digits, infinities, NaN), strings where numbers belong, nesting, and mutations of
real samples."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

EDGE_NUMBERS: list[Any] = [
    0,
    -1,
    -32,
    1,
    3,
    2**31,
    2**63,
    10**400,
    0.5,
    1.5,
    -0.0,
    math.inf,
    -math.inf,
    math.nan,
    1e308,
    True,
    False,
]
EDGE_TEXT: list[Any] = ["", "8", "NaN", "+Inf", "1e400", "x" * 300, "\x00", "é", "-1", "0x10"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(EDGE_NUMBERS),
    st.sampled_from(EDGE_TEXT),
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12
)
hostile = st.one_of(st.sampled_from(EDGE_NUMBERS), st.sampled_from(EDGE_TEXT), json_values)

NUMBER_TEXTS = st.one_of(
    st.sampled_from(
        ["0", "1", "-1", "NaN", "+Inf", "-Inf", "1e400", "1e-400", "3.5", "0x10", "1_000", "", "abc", "9" * 500, "-0", "1e308"]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(2**80), max_value=2**80).map(str),
)


def mutate_lines(lines: list[str], data: st.DataObject, line_texts: st.SearchStrategy[str]) -> list[str]:
    """Real lines with some dropped, cut, duplicated, swapped for junk or with their numbers replaced."""
    out = list(lines)
    for _ in range(data.draw(st.integers(0, 8))):
        if not out:
            break
        at = data.draw(st.integers(0, len(out) - 1))
        how = data.draw(st.sampled_from(["drop", "cut", "junk", "number", "dup", "brace"]))
        line = out[at]
        if how == "drop":
            del out[at]
        elif how == "cut":
            out[at] = line[: data.draw(st.integers(0, max(0, len(line))))]
        elif how == "junk":
            out[at] = data.draw(line_texts)
        elif how == "number":
            head, _, _ = line.rpartition(" ")
            out[at] = f"{head or line} {data.draw(NUMBER_TEXTS)}"
        elif how == "dup":
            out.insert(at, line)
        else:
            out[at] = line.replace("}", "", 1) if "}" in line else line + "{"
    return out
