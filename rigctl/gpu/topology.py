"""Topology from NVML facts, and its rendering the way `nvidia-smi topo` prints it.

Pure functions: the backends supply `RigInfo`, this module derives the matrix.
"""

from __future__ import annotations

from rigctl import fmt
from rigctl.gpu.model import P2P_LEGEND, Gpu, P2PCap, P2PStatus, RigInfo, Topology

TOPO_LEGEND: tuple[tuple[str, str], ...] = (
    ("X", "Self"),
    ("SYS", "Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)"),
    ("NODE", "Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node"),
    ("PHB", "Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)"),
    ("PXB", "Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)"),
    ("PIX", "Connection traversing at most a single PCIe bridge"),
    ("NV#", "Connection traversing a bonded set of # NVLinks"),
)

P2P_LETTERS: dict[P2PCap, str] = {
    P2PCap.READ: "r",
    P2PCap.WRITE: "w",
    P2PCap.NVLINK: "n",
    P2PCap.ATOMICS: "a",
    P2PCap.PCI: "p",
}


def nvlink_count(src: Gpu, dst: Gpu) -> int:
    """Active links of `src` whose far end is `dst`'s PCI bus id."""
    return sum(1 for link in src.active_nvlinks if link.remote_bus_id == dst.bus_id)


def build_topology(info: RigInfo) -> Topology:
    labels: dict[tuple[int, int], str] = {}
    counts: dict[tuple[int, int], int] = {}
    for a in info.gpus:
        for b in info.gpus:
            key = (a.index, b.index)
            if a.index == b.index:
                labels[key] = "X"
                continue
            count = nvlink_count(a, b)
            counts[key] = count
            if count:
                labels[key] = f"NV{count}"
            else:
                pair = (min(a.index, b.index), max(a.index, b.index))
                labels[key] = info.pcie_paths.get(pair, "N/A")
    return Topology(
        labels=labels,
        nvlink_counts=counts,
        p2p=dict(info.p2p),
        fully_connected_nvlink=vllm_fully_connected(info),
    )


def vllm_fully_connected(info: RigInfo) -> bool:
    """vLLM's NvmlCudaPlatform.is_fully_connected: NVLink P2P OK for every pair.

    Any failed query counts as "not connected", exactly as vLLM treats an NVMLError.
    """
    indices = [gpu.index for gpu in info.gpus]
    for i in indices:
        for j in indices:
            if i != j and info.p2p.get((i, j, P2PCap.NVLINK)) is not P2PStatus.OK:
                return False
    return len(indices) > 1


def p2p_code(topology: Topology, i: int, j: int, cap: P2PCap) -> str:
    if i == j:
        return "X"
    status = topology.p2p.get((i, j, cap))
    return status.value if status is not None else "U"


def _cells(rows: list[list[str]]) -> str:
    return fmt.table(rows, "<" + "^" * (len(rows[0]) - 1))  # nvidia-smi centres the matrix cells


def render_matrix(info: RigInfo, topology: Topology) -> str:
    """The `nvidia-smi topo -m` matrix, affinity columns and legend."""
    names = [f"GPU{gpu.index}" for gpu in info.gpus]
    rows = [["", *names, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]]
    for gpu in info.gpus:
        row = [f"GPU{gpu.index}"]
        row += [topology.labels[(gpu.index, other.index)] for other in info.gpus]
        row += [
            gpu.cpu_affinity or "N/A",
            gpu.numa_affinity or "N/A",
            "N/A" if gpu.gpu_numa_id is None else str(gpu.gpu_numa_id),
        ]
        rows.append(row)
    legend = "\n".join(f"  {code:<4} = {text}" for code, text in TOPO_LEGEND)
    return f"{_cells(rows)}\n\nLegend:\n\n{legend}"


def render_p2p(info: RigInfo, topology: Topology, caps: tuple[P2PCap, ...] = tuple(P2PCap)) -> str:
    """One `nvidia-smi topo -p2p <letter>` matrix per capability, then the legend."""
    names = [f"GPU{gpu.index}" for gpu in info.gpus]
    blocks = []
    for cap in caps:
        rows = [[f"P2P {cap.value} ({P2P_LETTERS[cap]})", *names]]
        for gpu in info.gpus:
            rows.append([f"GPU{gpu.index}", *(p2p_code(topology, gpu.index, o.index, cap) for o in info.gpus)])
        blocks.append(_cells(rows))
    legend = "\n".join(f"  {code:<4} = {text}" for code, text in P2P_LEGEND.items())
    return "\n\n".join(blocks) + f"\n\nLegend:\n\n{legend}"


def render_links(info: RigInfo) -> str:
    """NVLink per link (like `nvidia-smi nvlink -s`) and PCIe per GPU."""
    by_bus = {gpu.bus_id: gpu.index for gpu in info.gpus}
    lines = []
    for gpu in info.gpus:
        lines.append(f"GPU{gpu.index}: {gpu.name} ({gpu.bus_id})")
        if not gpu.nvlinks:
            lines.append("  NVLink: none")
        for link in gpu.nvlinks:
            if not link.active:
                lines.append(f"  Link {link.link}: <inactive>")
                continue
            peer = by_bus.get(link.remote_bus_id or "")
            far = f"GPU{peer}" if peer is not None else (link.remote_bus_id or "unknown")
            speed = f"{link.speed_gbps:.3f} GB/s" if link.speed_gbps is not None else "n/a"
            version = f"NVLink {link.version}" if link.version else "NVLink n/a"
            lines.append(f"  Link {link.link}: {speed}, {version}, to {far}")
        lines.append(f"  PCIe: {pcie_text(gpu)}")
    return "\n".join(lines)


def pcie_text(gpu: Gpu) -> str:
    link = _gen_width(gpu.pcie_gen_max, gpu.pcie_width_max)
    own = _gen_width(gpu.pcie_gpu_gen_max, gpu.pcie_gpu_width_max)
    return f"link max {link}, GPU max {own}"


def _gen_width(gen: int | None, width: int | None) -> str:
    g = f"Gen{gen}" if gen is not None else "Gen?"
    w = f"x{width}" if width is not None else "x?"
    return f"{g} {w}"
