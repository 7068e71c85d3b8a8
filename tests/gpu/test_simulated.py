"""Simulated rigs: shipped as data, move plausibly, and show what processes claim."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rigctl.errors import BadInputError
from rigctl.gpu.sampler import RigSampler
from rigctl.sim.claims import ClaimsReader, read_claims, remove_claim, write_claim
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig, rig_names
from rigctl.units import MIB
from tests.support import present


class Clock:
    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def test_required_rigs_are_shipped() -> None:
    assert {"2x3090-nvlink", "2x4090-pcie", "1x3090", "2x3090-gen3-x8"} <= set(rig_names())
    for name in rig_names():
        spec = load_rig(name)
        assert spec.gpus and spec.description


def test_unknown_rig_names_the_choices() -> None:
    with pytest.raises(BadInputError, match="2x3090-nvlink"):
        load_rig("3x3090")


def test_values_move_over_time_and_stay_plausible() -> None:
    clock = Clock()
    backend = SimulatedBackend(load_rig("2x3090-nvlink"), clock=clock)
    seen = []
    for _ in range(10):
        clock.now += 1.0
        seen.append(backend.sample()[0])
    assert len({s.power_w for s in seen}) > 3
    for s in seen:
        assert 0 <= present(s.util_gpu) <= 100 and 10 < present(s.power_w) <= 350 and 20 < present(s.temperature_c) < 90
        assert s.pcie_gen == 1 and s.sm_clock == 210  # idle cards clock down
    assert present(seen[-1].energy_j) > present(seen[0].energy_j)


def test_claims_show_memory_load_and_process_titles(tmp_path: Path) -> None:
    clock = Clock()
    backend = SimulatedBackend(load_rig("2x3090-nvlink"), claims_dir=tmp_path, clock=clock)
    write_claim(
        tmp_path,
        os.getpid(),
        [
            {"gpu": 0, "memory_bytes": 21_000 * MIB, "title": "VLLM::Worker_TP0", "load": 0.9},
            {"gpu": 1, "memory_bytes": 21_000 * MIB, "title": "VLLM::Worker_TP1", "load": 0.9},
        ],
    )
    for _ in range(60):  # temperature lags behind power
        clock.now += 1.0
        busy = backend.sample()
    hot = busy[0]
    assert present(hot.memory_used) >= 21_000 * MIB
    assert present(hot.power_w) > 250 and present(hot.util_gpu) > 70 and present(hot.temperature_c) > 55
    assert hot.pcie_gen == 4 and present(hot.sm_clock) > 1500
    sampler = RigSampler(backend, with_host=False)
    procs = present(sampler.snapshot().samples[1].processes)
    assert [p.name for p in procs] == ["VLLM::Worker_TP1"]
    assert procs[0].vllm_role == "worker TP1" and procs[0].cmdline  # psutil filled the real command line
    remove_claim(tmp_path, os.getpid())
    clock.now += 1.0
    assert present(backend.sample()[0].memory_used) < 10 * MIB


def test_claims_of_dead_processes_are_ignored(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    write_claim(tmp_path, proc.pid, [{"gpu": 0, "memory_bytes": 5 * MIB, "title": None, "load": 1.0}])
    (tmp_path / "garbage.json").write_text("{not json")
    assert read_claims(tmp_path) == []


def test_a_kept_reader_sees_rewritten_claims_and_a_claimant_dying(tmp_path: Path) -> None:
    reader = ClaimsReader(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        write_claim(tmp_path, child.pid, [{"gpu": 0, "memory_bytes": 5 * MIB, "title": None, "load": 0.5}])
        assert [c.memory_bytes for c in reader.read()] == [5 * MIB]
        assert [c.memory_bytes for c in reader.read()] == [5 * MIB]  # unchanged file: the parsed claim
        write_claim(tmp_path, child.pid, [{"gpu": 1, "memory_bytes": 7 * MIB, "title": None, "load": 0.5}])
        assert [(c.gpu, c.memory_bytes) for c in reader.read()] == [(1, 7 * MIB)]
    finally:
        child.kill()
        child.wait()
    assert reader.read() == []  # the file stays; its writer is gone


def test_desktop_processes_on_the_4090_rig_are_foreign() -> None:
    snapshot = RigSampler(SimulatedBackend(load_rig("2x4090-pcie")), with_host=False).snapshot()
    codes = {(w.code, w.gpu) for w in snapshot.warnings}
    assert ("foreign-vram", 0) in codes and ("foreign-vram", 1) not in codes
