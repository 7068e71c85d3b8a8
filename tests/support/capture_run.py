"""`rigctl capture` as the owner runs it (a real process on 127.0.0.1), with the apps' side of it:
requests sent through it, what came back, and the trace it wrote."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support.tap import Tap, events, parse_answer

SECRET = "sk-capture-test-0123456789"  # the app's key: it must reach vLLM and nothing else
TOOLS = [  # one tool, as the apps' chat with tools sends it
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "the weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


class Capture:
    def __init__(self, upstream: str, out: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rigctl", "capture", "--to", upstream, "--listen", "127.0.0.1:0", "--out", str(out), *extra],
            env=env or dict(os.environ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        first = self.proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", first)
        assert found, f"capture did not start: {first}{self.proc.stderr.read()}"
        self.url = f"http://127.0.0.1:{found.group(1)}"
        self.said = first

    def stop(self, sig: int = signal.SIGINT) -> tuple[int, str]:
        self.proc.send_signal(sig)
        _, err = self.proc.communicate(timeout=60)
        self.said += err
        return self.proc.returncode, self.said

    def trace(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        lines = [json.loads(line) for line in self.out.read_text().splitlines()]
        return lines[0], sorted(lines[1:], key=lambda e: e["t"])


class App:
    """An app talking to vLLM through the capture, each answer checked against the tap's record of
    what the server sent: the same bytes (a JSON answer), the same events (a stream)."""

    def __init__(self, capture: Capture, tap: Tap) -> None:
        self.capture, self.tap = capture, tap
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.client = httpx.Client(
            base_url=capture.url,
            timeout=120,
            trust_env=False,
            headers={"Authorization": f"Bearer {SECRET}", "X-App-Secret": SECRET},
        )

    def post(self, endpoint: str, body: dict[str, Any]) -> httpx.Response:
        mark = self.tap.mark()
        if body.get("stream"):
            with self.client.stream("POST", endpoint, json=body) as response:
                got = b"".join(response.iter_raw())
        else:
            response = self.client.post(endpoint, json=body)
            got = response.content
        self.sent.append((endpoint, body))
        deadline = time.monotonic() + 10
        while True:  # the tap has the whole answer once the app does; its thread may lag a moment
            try:
                status, _, wire = parse_answer(self.tap.since(mark))
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        assert status == response.status_code
        assert got == wire, "the app got other bytes than the server sent"
        if body.get("stream"):
            assert events(got) == events(wire)
        response._content = got
        return response

    def close(self) -> None:
        self.client.close()
