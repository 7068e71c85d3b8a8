"""What an answer said, read from its bytes as they pass through the proxy (never held back for
it): the usage vLLM reports (the last `usage` of a stream, the `usage` of a JSON answer), how
many chunks carried a token, whether the stream reached `[DONE]`, and an error's message.

Bounded: a stream's unfinished event is kept up to EVENT_LIMIT and a JSON answer up to
BODY_LIMIT; past that the answer is still passed on whole, only not read."""

from __future__ import annotations

import json
from typing import Any

EVENT_LIMIT = 4 * 1024 * 1024
BODY_LIMIT = 64 * 1024 * 1024


class AnswerReader:
    def __init__(self, streaming: bool) -> None:
        self.streaming = streaming
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.chunks = 0
        self.done = False
        self.error = ""
        self.unread = False  # too large (or compressed) to read: passed on, not understood
        self._buffer = b""
        self._body = bytearray()  # a JSON answer, gathered without copying it at every chunk

    def feed(self, data: bytes) -> None:
        if self.unread:
            return
        if not self.streaming:
            self._body += data
            if len(self._body) > BODY_LIMIT:
                self.unread, self._body = True, bytearray()
            return
        self._buffer += data
        while True:
            cut = _event_end(self._buffer)
            if cut is None:
                break
            event, self._buffer = self._buffer[: cut[0]], self._buffer[cut[1] :]
            self._event(event)
        if len(self._buffer) > EVENT_LIMIT:
            self.unread, self._buffer = True, b""

    def finish(self) -> None:
        """The answer ended: read what is left (a JSON answer; a last event without its blank line)."""
        if self.unread:
            return
        if self.streaming:
            if self._buffer.strip():
                self._event(self._buffer)
        else:
            try:
                data = json.loads(self._body)
            except ValueError:
                data = None
            if isinstance(data, dict):
                self._read(data)
                self.chunks = 1 if data.get("choices") else 0
        self._buffer, self._body = b"", bytearray()

    def usage(self) -> dict[str, int]:
        """What a trace line keeps of the answer: vLLM's usage, else the chunks that carried a token."""
        out = {}
        if self.prompt_tokens is not None:
            out["prompt_tokens"] = self.prompt_tokens
        if self.completion_tokens is not None:
            out["completion_tokens"] = self.completion_tokens
        elif self.chunks:
            out["chunks"] = self.chunks
        return out

    def _event(self, event: bytes) -> None:
        payload = b"".join(line[5:].strip() for line in event.splitlines() if line.startswith(b"data:"))
        if not payload:
            return  # a comment (": keep-alive") or an event without data
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            data = json.loads(payload)
        except ValueError:
            return
        if isinstance(data, dict):
            if data.get("choices"):
                self.chunks += 1
            self._read(data)

    def _read(self, data: dict[str, Any]) -> None:
        usage = data.get("usage")
        if isinstance(usage, dict):
            for key in ("prompt_tokens", "completion_tokens"):
                value = usage.get(key)
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    setattr(self, key, value)
        error = data.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            self.error = str(message)[:300]


def _event_end(buffer: bytes) -> tuple[int, int] | None:
    """(where the first event ends, where the next begins): SSE events end at a blank line, written
    with LF or CRLF line ends."""
    ends = [(at, at + len(sep)) for sep in (b"\n\n", b"\r\n\r\n") if (at := buffer.find(sep)) >= 0]
    return min(ends) if ends else None
