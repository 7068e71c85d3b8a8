"""Fault 4: memory another process holds took the box down. vLLM refuses to start when a GPU's
free memory is below total x gpu_memory_utilization; rigctl knows both before the stop."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from rigctl.sim.claims import write_claim
from rigctl.units import MIB
from tests.faults.rig import SERVED, Rig


@pytest.fixture
def squatter(rig: Rig) -> Iterator[subprocess.Popen[bytes]]:
    """A live process that holds 4 GiB on each simulated GPU (as a desktop or a notebook would)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    write_claim(
        rig.state_dir / "sim-claims", proc.pid, [{"gpu": g, "memory_bytes": 4096 * MIB, "title": None, "load": 0.0} for g in (0, 1)]
    )
    yield proc
    proc.kill()
    proc.wait()


def test_a_switch_vllm_would_refuse_is_refused_before_the_stop(rig: Rig) -> None:
    rig.add_profile("good", "gpu_memory_utilization = 0.70\n")  # it started; then a notebook took 4 GiB
    assert rig.rigctl("switch", "good").returncode == 0
    pid = rig.record()["pid"]
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        write_claim(
            rig.state_dir / "sim-claims",
            proc.pid,
            [{"gpu": g, "memory_bytes": 4096 * MIB, "title": None, "load": 0.0} for g in (0, 1)],
        )
        refused = rig.rigctl("switch", "alt")
        assert refused.returncode == 3, refused.stdout + refused.stderr
        last = refused.stderr.strip().splitlines()[-1]
        # 24 GiB - 333 MiB reserved - 4 GiB held = 19.7 GiB free; 0.92 x 24 GiB = 22.1 GiB wanted
        assert "vLLM would refuse to start: GPU0 would have 19.7 GiB free once good stops" in last
        assert "gpu_memory_utilization 0.92 asks for 22.1 of its 24.0 GiB: 2.4 GiB short" in last
        assert f"(pid {proc.pid}, 4.0 GiB)" in last and "good keeps serving" in last and "--force" in last
        assert rig.record()["pid"] == pid and rig.serves()[0] == SERVED
        rig.check_invariants()
        forced = rig.rigctl("switch", "alt", "--force")  # the owner insists: it is tried, fails, good returns
        assert forced.returncode == 3
        assert "alt failed:" in forced.stderr and "other processes hold VRAM" in forced.stderr
        assert "rolled back: good serves again" in forced.stderr and rig.serves()[0] == SERVED
        rig.check_invariants()
    finally:
        proc.kill()
        proc.wait()


def test_a_modest_profile_that_fits_beside_the_squatter_is_not_refused(rig: Rig, squatter: subprocess.Popen[bytes]) -> None:
    rig.add_profile("modest", "gpu_memory_utilization = 0.78\n")
    switched = rig.rigctl("switch", "modest")
    assert switched.returncode == 0, switched.stderr
    assert rig.status()["active_profile"] == "modest"
    rig.check_invariants()
