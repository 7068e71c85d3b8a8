"""The owner's requests as a bench replays them: a trace `rigctl capture` wrote, or a dataset in a
format `vllm bench serve` reads (ShareGPT conversations; JSONL with `prompt` and optional
`output_tokens`), so files owners already have work unchanged.

A trace is JSONL. Its first line says what the file is and what it holds; every other line is one
request as the apps sent it (the endpoint, the body, its arrival in seconds after the capture
began) and what its answer said (status, usage). No header is ever written: the `Authorization`
an app sent stays with the app.

    {"rigctl_trace": 1, "about": "...", "upstream": "http://127.0.0.1:8000", "started": 1796150000.0}
    {"t": 0.0, "endpoint": "/v1/chat/completions", "body": {...}, "status": 200, "stream": true,
     "prompt_tokens": 812, "completion_tokens": 64}
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from rigctl.errors import BadInputError
from rigctl.files import read_input_text
from rigctl.gateway.trace_lines import TRACE_VERSION
from rigctl.jsonio import loads_strict

TRACE_LIMIT = 512 * 1024 * 1024  # a day of an agent's traffic is tens of MB
REPLAYED = ("/v1/chat/completions", "/v1/completions")  # what a bench sends again
CHARS_PER_TOKEN = 4  # without the model's tokenizer, a length in tokens is this rough estimate


@dataclass(frozen=True)
class TracedRequest:
    t: float  # seconds after the capture began (a dataset: 0)
    endpoint: str
    body: dict[str, Any] = field(compare=True)
    status: int | None = None  # what the upstream answered (None: it did not answer)
    stream: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    chunks: int | None = None  # chunks that carried a token (a stream that did not ask for usage)
    error: str = ""  # the upstream failed: how (the app got it as it failed)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, "")}

    @property
    def model(self) -> str | None:
        value = self.body.get("model")
        return value if isinstance(value, str) else None

    def max_tokens(self) -> int:
        for key in ("max_completion_tokens", "max_tokens"):
            value = self.body.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return self.completion_tokens or self.chunks or 256

    def summary(self) -> str:
        """What the request is about, in one line, for the raw files."""
        if self.endpoint.endswith("chat/completions"):
            messages = self.body.get("messages")
            count = len(messages) if isinstance(messages, list) else 0
            tools = self.body.get("tools")
            return f"chat, {count} message(s)" + (f", {len(tools)} tool(s)" if isinstance(tools, list) else "")
        prompt = self.body.get("prompt")
        return f"completion, {len(prompt) if isinstance(prompt, str) else 0:,} characters"


def _entry(data: Any, where: str) -> TracedRequest:
    if not isinstance(data, dict):
        raise BadInputError(f"{where}: not a traced request (a JSON object)")
    endpoint, body, t = data.get("endpoint"), data.get("body"), data.get("t", 0.0)
    if not isinstance(endpoint, str) or not endpoint.startswith("/"):
        raise BadInputError(f"{where}: endpoint is {str(endpoint)[:40]!r}, not a path")
    if not isinstance(body, dict):
        raise BadInputError(f"{where}: body is not a JSON object")
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < 10**9:
        raise BadInputError(f"{where}: t is {str(t)[:20]}, not seconds after the capture began")
    status = data.get("status")
    status = status if isinstance(status, int) and not isinstance(status, bool) else None

    def count(key: str) -> int | None:
        value = data.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    return TracedRequest(
        float(t),
        endpoint,
        body,
        status,
        bool(data.get("stream")),
        count("prompt_tokens"),
        count("completion_tokens"),
        count("chunks"),
        str(data.get("error") or "")[:300],
    )


def _json_lines(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line; BadInputError naming file:line for one that is not JSON."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, loads_strict(line)
        except (ValueError, RecursionError) as exc:
            raise BadInputError(f"{path}:{number}: not JSON ({str(exc)[:80]})") from None


def read_trace(path: Path) -> tuple[dict[str, Any], list[TracedRequest]]:
    """(its header, its requests in arrival order); BadInputError naming file:line."""
    text = read_input_text(path, TRACE_LIMIT, "trace")
    head: dict[str, Any] = {}
    out = []
    for number, data in _json_lines(path, text):
        if number == 1 and isinstance(data, dict) and "rigctl_trace" in data:
            if data["rigctl_trace"] != TRACE_VERSION:
                raise BadInputError(
                    f"{path}: a trace of version {str(data['rigctl_trace'])[:10]}; this rigctl reads {TRACE_VERSION}"
                )
            head = data
            continue
        out.append(_entry(data, f"{path}:{number}"))
    if not head:
        raise BadInputError(
            f"{path}: not a rigctl trace (its first line is not the trace's header; for a dataset, give dataset = and format =)"
        )
    out.sort(key=lambda r: r.t)
    return head, out


def read_dataset(path: Path, kind: str) -> list[TracedRequest]:
    """A ShareGPT file (the first human turn of each conversation, its answer's length as the output,
    estimated at 4 characters a token) or a JSONL of {"prompt", "output_tokens"}, as completions."""
    text = read_input_text(path, TRACE_LIMIT, "dataset")
    out: list[TracedRequest] = []
    if kind == "sharegpt":
        try:
            data = loads_strict(text)
        except (ValueError, RecursionError) as exc:
            raise BadInputError(f"{path}: not a ShareGPT JSON file ({str(exc)[:80]})") from None
        if not isinstance(data, list):
            raise BadInputError(f"{path}: a ShareGPT file is a JSON list of conversations")
        for number, item in enumerate(data):
            turns = item.get("conversations") if isinstance(item, dict) else None
            if not isinstance(turns, list) or len(turns) < 2:
                continue  # vllm bench serve skips conversations without a question and an answer too
            ask, answer = turns[0], turns[1]
            if not (
                isinstance(ask, dict)
                and isinstance(answer, dict)
                and isinstance(ask.get("value"), str)
                and isinstance(answer.get("value"), str)
            ):
                raise BadInputError(f'{path}: conversation {number}: turns must be {{"from", "value"}} objects')
            tokens = max(1, len(answer["value"]) // CHARS_PER_TOKEN)
            out.append(TracedRequest(0.0, "/v1/completions", {"prompt": ask["value"], "max_tokens": tokens}))
        return out
    for number, data in _json_lines(path, text):
        prompt = data.get("prompt") if isinstance(data, dict) else None
        if not isinstance(prompt, str):
            raise BadInputError(f'{path}:{number}: a line needs "prompt" (a string)')
        tokens = data.get("output_tokens", 256)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 < tokens < 10**6:
            raise BadInputError(f"{path}:{number}: output_tokens is {str(tokens)[:20]}, not a count of tokens")
        out.append(TracedRequest(0.0, "/v1/completions", {"prompt": prompt, "max_tokens": tokens}))
    return out


RECORDED = "gateway"  # trace = "gateway": the front door's recording ([gateway] record), a window of it


def parse_window(text: str, now: float) -> tuple[float, float]:
    """(since, until) in wall-clock seconds from a window as a plan writes it: "24h", "90m", "2d"
    (the last ones), or "START/END" in ISO 8601 (local time unless it says otherwise)."""
    spans = {"m": 60.0, "h": 3600.0, "d": 86400.0}
    text = text.strip()
    if text[-1:] in spans:
        try:
            amount = float(text[:-1])
        except ValueError:
            amount = -1.0
        if amount > 0 and math.isfinite(amount):
            return now - amount * spans[text[-1]], now
    if "/" in text:
        start, _, end = text.partition("/")
        try:
            since, until = datetime.fromisoformat(start).timestamp(), datetime.fromisoformat(end).timestamp()
        except ValueError:
            since = until = -1.0
        if 0 <= since < until:
            return since, until
    raise BadInputError(f'window {text[:60]!r}: give the last "24h", "90m" or "2d", or "START/END" in ISO 8601')


def read_recorded(files: list[Path], since: float, until: float) -> list[TracedRequest]:
    """The requests the front door recorded between since and until (wall-clock seconds), their
    arrivals counted from the first of them; those whose body the door could not keep (not
    strict JSON, over its limit: recorded as {}) are left out, as nothing could send them again."""
    picked: list[tuple[float, TracedRequest]] = []
    for path in files:
        head, requests = read_trace(path)
        started = head.get("started")
        if isinstance(started, bool) or not isinstance(started, (int, float)):
            raise BadInputError(f"{path}: the trace's header has no start time")
        picked += [(started + r.t, r) for r in requests if r.body and since <= started + r.t <= until]
    picked.sort(key=lambda pair: pair[0])
    first = picked[0][0] if picked else 0.0
    return [replace(r, t=round(at - first, 6)) for at, r in picked]
