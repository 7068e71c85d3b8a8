"""rigctl's topology, computed from NVML, equals what nvidia-smi printed on real rigs.

Each rig is described to the real NVML backend through the fake libnvidia-ml; rigctl's
rendering is parsed with the same parser as nvidia-smi's text and compared cell by cell.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rigctl.gpu.model import P2PCap, RigInfo, Topology
from rigctl.gpu.nvml import NvmlBackend
from rigctl.gpu.topology import build_topology, render_matrix, render_p2p
from rigctl.sim.rigspec import load_rig
from tests.support.fake_nvml import FakeNvmlLib, installed
from tests.support.topo_parse import parse_topo_affinity, parse_topo_matrix, section_after

FIXTURES = Path(__file__).parent.parent / "fixtures"


def nvml_topology(rig: str) -> tuple[RigInfo, Topology]:
    with installed(FakeNvmlLib(load_rig(rig))):
        info = NvmlBackend().info()
    return info, build_topology(info)


def test_2x3090_nvlink_matches_nvidia_smi_topo_m() -> None:
    reference = (FIXTURES / "topo" / "2x3090-nvlink-nv4.txt").read_text()
    info, topology = nvml_topology("2x3090-nvlink")
    ours = render_matrix(info, topology)
    assert parse_topo_matrix(ours) == parse_topo_matrix(reference)
    assert parse_topo_matrix(ours)[("GPU0", "GPU1")] == "NV4"
    assert parse_topo_affinity(ours) == parse_topo_affinity(reference)
    assert topology.fully_connected_nvlink


def test_pcie_rig_with_refused_p2p_matches_nvidia_smi() -> None:
    reference = (FIXTURES / "topo" / "2x5090-pcie-phb-p2p-gns.txt").read_text()
    info, topology = nvml_topology(str(FIXTURES / "2x5090-pcie.toml"))
    ours_m = render_matrix(info, topology)
    ref_m = section_after(reference, "$ nvidia-smi topo -m")
    assert parse_topo_matrix(ours_m) == parse_topo_matrix(ref_m)
    assert parse_topo_affinity(ours_m) == parse_topo_affinity(ref_m)
    # `topo -p2p rw` prints one code for read and write together; both are GNS here.
    ref_rw = parse_topo_matrix(section_after(reference, "$ nvidia-smi topo -p2p rw"))
    for cap in (P2PCap.READ, P2PCap.WRITE):
        block = render_p2p(info, topology, caps=(cap,))
        assert parse_topo_matrix(block.replace(f"P2P {cap.value} ({cap.value[0]})", "")) == ref_rw
    assert not topology.fully_connected_nvlink


@pytest.mark.parametrize("rig,label", [("2x4090-pcie", "PHB"), ("2x3090-gen3-x8", "NV4")])
def test_nvml_and_simulated_backends_agree(rig: str, label: str) -> None:
    from rigctl.sim.rig import SimulatedBackend

    info, topology = nvml_topology(rig)
    sim_info = SimulatedBackend(load_rig(rig)).info()
    sim_topology = build_topology(sim_info)
    assert topology.labels == sim_topology.labels
    assert topology.labels[(0, 1)] == label
    assert topology.p2p == sim_topology.p2p
    assert [g.nvlinks for g in info.gpus] == [g.nvlinks for g in sim_info.gpus]
