"""rigctl/vllm is the one model of vLLM's memory: the simulator boots every shipped profile with it
and `rigctl fit` predicts with it, so on the profile's own rig the pool the simulated vLLM logs and
the pool `fit` predicts are the same figure (the issue's bar: within 1%)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rigctl.profiles.store import ProfileStore
from rigctl.profiles.vllm_args import render
from rigctl.vllm.bootlog import read_bootlog
from rigctl.vllm.options import load_option_table
from tests.support.serving import free_port
from tests.support.sim_server import launch, wait_ready

EXAMPLES = Path(__file__).resolve().parents[2] / "rigctl" / "profiles" / "examples"
SHIPPED = sorted(p.stem for p in EXAMPLES.glob("*.toml") if p.stem != "qwen36-27b-base")  # base: extend it
# the rig each profile is made for (its description says so)
RIG_OF = {"qwen36-27b-1x3090": "1x3090", "qwen36-27b-4090-dp2": "2x4090-pcie", "qwen36-27b-4090-tp2-mtp": "2x4090-pcie"}


def test_every_shipped_profile_has_its_rig_here() -> None:
    assert len(SHIPPED) >= 8 and set(RIG_OF) <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_the_simulated_boot_logs_the_pool_fit_predicts(name: str, sim_env: dict[str, str], tmp_path: Path) -> None:
    rig = RIG_OF.get(name, "2x3090-nvlink")
    env = {**sim_env, "RIGCTL_SIM": rig}
    fit = subprocess.run(
        [sys.executable, "-m", "rigctl", "fit", name, "--sim", rig, "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert fit.returncode == 0, fit.stderr
    answer = json.loads(fit.stdout)
    own = next(
        lay
        for lay in answer["layouts"]
        if (lay["tp"], lay["dp"]) == (answer["profile_layout"]["tp"], answer["profile_layout"]["dp"])
    )
    assert own["fits"] and own["pool_tokens"], own

    spec = render(ProfileStore().load(name), load_option_table())
    args = list(spec.argv[spec.argv.index("serve") :])
    port = free_port()
    if "--port" in args:
        args[args.index("--port") + 1] = str(port)
    else:
        args += ["--port", str(port)]
    log = tmp_path / "vllm.log"
    proc = launch([*args, "--host", "127.0.0.1"], {**env, **spec.env, "HOME": os.environ.get("HOME", "/")}, log)
    try:
        wait_ready(f"http://127.0.0.1:{port}", proc, limit=60)
    finally:
        proc.terminate()
        proc.wait(10)
    booted = read_bootlog(log.read_text().splitlines())
    assert booted.kv_tokens, log.read_text()[-2000:]
    assert abs(booted.kv_tokens / own["pool_tokens"] - 1) <= 0.01, (name, rig, booted.kv_tokens, own["pool_tokens"])
    assert booted.available_kv_gib == pytest.approx(own["available_kv_gib"], abs=0.01)
