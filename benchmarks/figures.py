"""The figures a benchmark hands to the README: `figure(key, text)` prints one machine-readable
line beside the human one, and benchmarks/readme_figures.py puts the text where the README marks
that key (<!--fig:KEY-->text<!--/fig-->), so a figure there is always one a benchmark printed."""

from __future__ import annotations

PREFIX = "FIGURE "


def figure(key: str, text: str) -> None:
    print(f"{PREFIX}{key} {text}", flush=True)


def parse(line: str) -> tuple[str, str] | None:
    """(key, text) of a FIGURE line, None for any other line."""
    if not line.startswith(PREFIX):
        return None
    key, _, text = line[len(PREFIX) :].rstrip("\n").partition(" ")
    return (key, text) if key and text else None
