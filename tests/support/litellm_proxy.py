"""The real LiteLLM proxy (scripts/setup_litellm.sh puts it in a venv of its own) on 127.0.0.1,
started on a config rigctl wrote; and the rigs it routes to, each a simulated rig behind its door."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from rigctl.gateway.control import DoorClient
from tests.support.door_rig import DoorRig
from tests.support.serving import free_port
from tests.support.waiting import wait_until

MASTER_KEY = "sk-router-test-master"


def litellm_command() -> str:
    """The proxy's console script: $RIGCTL_LITELLM, else where scripts/setup_litellm.sh caches it."""
    given = os.environ.get("RIGCTL_LITELLM")
    if given:
        return given
    cache = Path(os.environ.get("RIGCTL_LITELLM_HOME") or Path.home() / ".cache" / "rigctl" / "litellm")
    found = sorted(cache.glob("venv-*/bin/litellm"))
    if not found:
        pytest.skip("no LiteLLM proxy here: run scripts/setup_litellm.sh (.ci/run does), or set RIGCTL_LITELLM")
    return str(found[-1])


class LiteLLMProxy:
    def __init__(self, config: Path, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "LITELLM_MASTER_KEY": MASTER_KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        self.proc = subprocess.Popen(
            [litellm_command(), "--config", str(config), "--host", "127.0.0.1", "--port", str(self.port)],
            env=env,
            stdout=open(log, "wb"),  # the proxy's own log, read when a test fails
            stderr=subprocess.STDOUT,
        )
        self.log = log
        wait_until(f"the LiteLLM proxy on {self.url} ({log})", self._up, timeout=120)

    def _up(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()[-3000:]
        try:
            return httpx.get(f"{self.url}/health/liveliness", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def chat(self, prompt: str, max_tokens: int = 8, timeout: float = 120, **extra: Any) -> httpx.Response:
        body = {"model": "qwen3.6-27b", "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, **extra}
        headers = {"Authorization": f"Bearer {MASTER_KEY}"}
        return httpx.post(f"{self.url}/v1/chat/completions", headers=headers, json=body, timeout=timeout)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def door_requests(rig: DoorRig) -> int:
    """Every request the rig's door has seen end, however it ended."""
    client = DoorClient(rig.state_dir / "gateway.sock")
    try:
        return sum(int(v) for v in client.status()["counts"].values())
    finally:
        client.close()


def generated(rig: DoorRig) -> float:
    """The rig's engine's vllm:generation_tokens_total."""
    text = httpx.get(f"http://127.0.0.1:{rig.port}/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("vllm:generation_tokens_total"))


def router_rigctl(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """rigctl on the router's machine (its own config.toml names the rigs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIGCTL_")}
    env.update({f"XDG_{kind.upper()}_HOME": str(home / kind) for kind in ("config", "state", "cache")})
    return subprocess.run([sys.executable, "-m", "rigctl", *args], env=env, capture_output=True, text=True, timeout=120)
