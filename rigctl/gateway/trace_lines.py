"""The trace's lines as written: its header and one request a line. A trace is written by the
front door's recording ([gateway] record) and by `rigctl capture`, and read by a bench
(rigctl.bench.trace, which documents the format)."""

from __future__ import annotations

import json
from typing import Any

TRACE_VERSION = 1
ABOUT = (
    "rigctl capture trace: one request a line as the apps sent it (endpoint, body, arrival), with what its "
    "answer said (status, usage); no header value is ever written"
)


def header(upstream: str, started: float) -> dict[str, Any]:
    return {"rigctl_trace": TRACE_VERSION, "about": ABOUT, "upstream": upstream, "started": started}


def dumps_line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
