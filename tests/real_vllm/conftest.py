"""The real engine: vLLM's CPU build serving the tiny model, as scripts/setup_real_vllm.sh sets
them up. Skipped, with the reason, unless RIGCTL_REAL_VLLM (the `vllm` executable) and
RIGCTL_REAL_MODEL (the model dir) are set:

    eval "$(scripts/setup_real_vllm.sh)" && pytest -m real_vllm -n 0 tests/real_vllm
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.rig import Rig

VLLM = os.environ.get("RIGCTL_REAL_VLLM", "")
MODEL = os.environ.get("RIGCTL_REAL_MODEL", "")
KV_BYTES_PER_TOKEN = 1024  # the tiny model: 2 layers x (K, V) x 2 heads x 64 x 2 bytes
ENV = '[env]\nVLLM_CPU_KVCACHE_SPACE = "1"\nHF_HUB_OFFLINE = "1"\nVLLM_HOST_IP = "127.0.0.1"\nVLLM_NO_USAGE_STATS = "1"\n'


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    if not VLLM or not MODEL:
        reason = 'the real vLLM is not set up: eval "$(scripts/setup_real_vllm.sh)" sets RIGCTL_REAL_VLLM/MODEL'
    elif not Path(VLLM).is_file() or not (Path(MODEL) / "config.json").is_file():
        reason = f"RIGCTL_REAL_VLLM={VLLM} or RIGCTL_REAL_MODEL={MODEL} does not exist"
    for item in items:
        if "real_vllm" in str(item.fspath):
            item.add_marker(pytest.mark.real_vllm)
            # a real boot is half a minute on 2 cores, a rollback two of them, a bench run six:
            # the suite's 120 s would cut them short on a loaded machine
            item.add_marker(pytest.mark.timeout(900))
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


class RealRig(Rig):
    """The fault harness's rig, with the process launcher running the real vLLM and no --sim."""

    def __init__(self, home: Path) -> None:
        super().__init__(home)
        for key in ("RIGCTL_SIM", "RIGCTL_SIM_TIME_SCALE"):
            self.env.pop(key, None)
        for sim_profile in self.profiles.glob("*.toml"):
            sim_profile.unlink()
        self.write_config(f"[server]\nvllm_command = {json.dumps([VLLM])}\nstop_grace = 20\nboot_timeout = 300\n")
        self.add_tiny("tiny")

    def add_tiny(self, name: str, env: str = ENV, **vllm: object) -> Path:
        """A profile serving the tiny model: 2,048 tokens, eager, 1 GiB of KV (1,048,576 tokens);
        `vllm` overrides or adds [vllm] keys."""
        values = {
            "host": "127.0.0.1",
            "port": self.port,
            "max_model_len": 2048,
            "enforce_eager": True,
            "served_model_name": "tiny",
            **vllm,
        }
        lines = "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())
        path = self.profiles / f"{name}.toml"
        path.write_text(f'description = "the tiny test model"\nmodel = "{MODEL}"\n[vllm]\n{lines}{env}')
        return path


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealRig]:
    rig = RealRig(tmp_path_factory.mktemp("real") / "home")
    yield rig
    rig.cleanup()


class DoorRealRig(RealRig):
    """A real rig with its front door: `rigctl gateway` on the rig's port, `profile` served behind it."""

    door: subprocess.Popen[str] | None = None

    def serve_behind_the_door(self, profile: str) -> None:
        self.door = self.popen("gateway", "--listen", f"127.0.0.1:{self.port}")
        self.wait_for(self.door, "the apps' address")
        switched = self.rigctl("switch", profile, timeout=400)
        assert switched.returncode == 0, switched.stdout + switched.stderr

    def cleanup(self) -> None:
        if self.door is not None:
            self.door.terminate()
            self.door.wait(30)
        super().cleanup()
