"""What of the server's log to show: vLLM's own words without rigctl's polling of it (the access
lines of /metrics, /health, /v1/models every second bury them), optionally warnings and errors
only, and the lines a search matches. Pure: the log screen keeps the lines and asks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# uvicorn's access lines for what rigctl itself asks every second: noise in a tail that is
# there to show what vLLM says. The log screen and the file keep them.
OWN_POLLS = re.compile(r'"GET /(?:metrics|health|v1/models|version) HTTP/1\.[01]" 200')
# uvicorn's access line of any request answered (2xx, 3xx), bare or behind vLLM's process prefix:
# one a request, so under load they push everything vLLM says (its throughput lines, warnings) off
# a short tail within seconds. The dashboard's tail leaves them to the log screen; the access line
# of a refused or failed request (4xx, 5xx) stays.
ANSWERED_REQUESTS = re.compile(r'INFO:\s+\S+ - "[A-Z]+ [^"]* HTTP/[\d.]+" [23]\d\d\b')
ERROR = re.compile(r"\b(ERROR|CRITICAL|Traceback|Error:|Exception|OutOfMemoryError|failed)\b")
WARNING = re.compile(r"\bWARNING\b")

Level = Literal["error", "warning", "info"]


def level_of(line: str) -> Level:
    if ERROR.search(line):
        return "error"
    if WARNING.search(line):
        return "warning"
    return "info"


@dataclass(frozen=True)
class LogFilter:
    show_own_polls: bool = False
    problems_only: bool = False  # warnings and errors (a traceback's lines count as the error's)
    search: str = ""

    def keep(self, line: str) -> bool:
        if not self.show_own_polls and OWN_POLLS.search(line):
            return False
        return not self.problems_only or level_of(line) != "info"

    def matches(self, line: str) -> bool:
        return bool(self.search) and self.search.lower() in line.lower()

    def describe(self) -> str:
        """What the title says is hidden or sought, so a filtered view never passes for the whole log."""
        said = []
        if not self.show_own_polls:
            said.append("rigctl's polls hidden (o)")
        if self.problems_only:
            said.append("warnings and errors only (w)")
        if self.search:
            said.append(f"/{self.search} (n: next)")
        return "; ".join(said)
