"""The simulator as a real vLLM-shaped process on 127.0.0.1, for tests that talk to its HTTP API."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.support.serving import free_port

AWQ_TP2 = [
    "serve",
    "Qwen/Qwen3.6-27B-AWQ",
    "--tensor-parallel-size",
    "2",
    "--quantization",
    "awq_marlin",
    "--max-model-len",
    "131072",
    "--kv-cache-dtype",
    "fp8_e5m2",
    "--served-model-name",
    "qwen3.6-27b",
    "--host",
    "127.0.0.1",
]


def launch(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "rigctl.sim.vllm_server", *args], env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT
    )


def wait_ready(url: str, proc: subprocess.Popen[bytes], limit: float = 15.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert proc.poll() is None, "simulator exited during boot"
        try:
            if httpx.get(f"{url}/health", timeout=0.5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError("not ready")


def serve_sim(extra: list[str], env: dict[str, str], log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    port = free_port()
    proc = launch([*AWQ_TP2, "--port", str(port), *extra], env, log)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, proc)
    yield url, proc, log
    proc.terminate()
    proc.wait(10)
