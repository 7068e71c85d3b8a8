"""The trace's header as the front door's recording writes it ([gateway] record, `rigctl gateway
--out`, `rigctl capture`); a bench reads it (rigctl.bench.trace, which documents the format)."""

from __future__ import annotations

from typing import Any

TRACE_VERSION = 1
ABOUT = (
    "rigctl trace: one request a line as the apps sent it (endpoint, body, arrival), with what its "
    "answer said (status, usage); no header value is ever written"
)


def header(upstream: str, started: float) -> dict[str, Any]:
    return {"rigctl_trace": TRACE_VERSION, "about": ABOUT, "upstream": upstream, "started": started}
