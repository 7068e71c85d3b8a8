"""Helpers for tests that run the simulator: free ports, user profiles on them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

import httpx

_next: dict[str, int] = {}


def free_port() -> int:
    """A port no other test takes: each xdist worker draws from its own range below the kernel's
    ephemeral ports (a port the kernel hands out with bind(0) and takes back can be handed to
    the next test of another worker before the first test's server binds it)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    block = 20000 + 1000 * index
    offset = _next.get(worker, (os.getpid() % 10) * 100)  # a re-run of the worker starts elsewhere
    for _ in range(1000):
        offset = (offset + 1) % 1000
        port = block + offset
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _next[worker] = offset
        return port
    raise RuntimeError(f"no free port in {block}-{block + 999}")


def add_profile(user: Path, name: str, body: str, port: int, parent: str = "qwen36-27b-awq-tp2", top: str = "") -> None:
    """A user profile extending a shipped one, on the test's port, plus `body` in its [vllm] table
    (and `top` before it: top-level keys such as model)."""
    (user / f"{name}.toml").write_text(f'extends = "{parent}"\n{top}[vllm]\nport = {port}\n{body}')


# A model neither rigctl nor the simulator knows the config of: the simulator sizes it from its
# name (48B), rigctl cannot predict its pool, so a context that does not fit fails at the boot (KV
# too small: 131,072 asked, ~87,000 fit on 2x24 GB at TP=2), as an unknown model's does on a real rig.
UNPREDICTED_MODEL = 'model = "acme/Mystery-48B-AWQ"\n'


class LongRequest(threading.Thread):
    """A streaming completion of `tokens` tokens, as an app's long generation is: what it got."""

    def __init__(self, port: int, tokens: int) -> None:
        super().__init__(daemon=True)
        self.port, self.tokens = port, tokens
        self.started = threading.Event()
        self.finish_reason: str | None = None
        self.chunks = 0
        self.error = ""

    def run(self) -> None:
        body = {"model": "qwen3.6-27b", "prompt": "write a long story", "max_tokens": self.tokens, "stream": True}
        try:
            with httpx.stream("POST", f"http://127.0.0.1:{self.port}/v1/completions", json=body, timeout=120) as r:
                for line in r.iter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    event = json.loads(line[6:])
                    if "error" in event:  # how vLLM (and the door cutting a stream) ends one that fails
                        self.error = event["error"]["message"]
                        continue
                    self.chunks += 1
                    self.started.set()
                    reason = event["choices"][0].get("finish_reason")
                    self.finish_reason = reason or self.finish_reason
        except httpx.HTTPError as exc:
            self.error = str(exc) or type(exc).__name__
        self.started.set()


class ShortRequests(threading.Thread):
    """An app's short requests, one after another until `stop`: how many were answered."""

    def __init__(self, port: int, tokens: int = 4) -> None:
        super().__init__(daemon=True)
        self.port, self.tokens = port, tokens
        self.stop = threading.Event()
        self.answered = threading.Event()  # set at the first answer
        self.count = 0
        self.errors: list[str] = []

    def answers(self) -> int:
        return self.count

    def run(self) -> None:
        body = {"model": "qwen3.6-27b", "prompt": "hi", "max_tokens": self.tokens}
        while not self.stop.is_set():
            try:
                answer = httpx.post(f"http://127.0.0.1:{self.port}/v1/completions", json=body, timeout=60)
            except httpx.HTTPError as exc:
                self.errors.append(str(exc) or type(exc).__name__)
                self.stop.wait(0.2)
                continue
            if answer.status_code == 200:
                self.count += 1
                self.answered.set()
            else:
                self.errors.append(f"HTTP {answer.status_code}")
            self.stop.wait(0.2)


class Probe(Protocol):
    """An app's requests sent one after another until `stop` (ShortRequests, the real suite's)."""

    stop: threading.Event

    def start(self) -> None: ...

    def join(self, timeout: float | None = None) -> None: ...

    def answers(self) -> int: ...


T = TypeVar("T")


def while_probed(prober: Probe, act: Callable[[], T], timeout: float = 120) -> T:
    """`act` (a switch) once `prober` was answered, while it sends its requests; then until it was
    answered once more (by what serves after it); the prober stopped whatever happened."""
    prober.start()
    try:
        deadline = time.monotonic() + timeout
        while prober.answers() == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert prober.answers(), "the prober was never answered before the switch"
        done = act()
        before = prober.answers()
        deadline = time.monotonic() + timeout
        while prober.answers() == before and time.monotonic() < deadline:
            time.sleep(0.1)
        return done
    finally:
        prober.stop.set()
        prober.join(timeout)


def rigctl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """rigctl as a separate process, as an owner over SSH or a cron job runs it."""
    return subprocess.run([sys.executable, "-m", "rigctl", *args], env=env, capture_output=True, text=True, timeout=120)
