"""The interconnect: topo matrix, NVLink/PCIe per GPU, and the warnings that matter."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from rigctl.gpu.model import P2PCap, RigSnapshot
from rigctl.gpu.topology import p2p_code

SEVERITY_STYLE = {"info": "dim", "warning": "yellow", "error": "bold red"}


def topology_text(snapshot: RigSnapshot, matrix: bool = True, essentials_only: bool = False) -> Text:
    """`matrix`: the nvidia-smi topo -m grid; `essentials_only`: pair lines and real warnings
    (a short terminal drops the per-GPU link lines and informational notes)."""
    info, topo = snapshot.info, snapshot.topology
    out = Text()
    names = [f"GPU{g.index}" for g in info.gpus]
    if matrix and len(info.gpus) > 1:
        out.append("      " + "  ".join(f"{n:^5}" for n in names) + "\n", style="bold")
        for gpu in info.gpus:
            cells = "  ".join(f"{topo.labels[(gpu.index, o.index)]:^5}" for o in info.gpus)
            out.append(f"{'GPU' + str(gpu.index):<6}{cells}\n")
    for a in info.gpus:
        for b in info.gpus:
            if a.index < b.index:
                codes = "/".join(p2p_code(topo, a.index, b.index, c) for c in (P2PCap.READ, P2PCap.NVLINK))
                out.append(f"GPU{a.index}-GPU{b.index} {topo.labels[(a.index, b.index)]}  P2P r/n {codes}\n")
    if not essentials_only:
        for gpu in info.gpus:
            links = gpu.active_nvlinks
            nv = f"{len(links)}x NVLink {links[0].version}" if links else "no NVLink"
            out.append(f"GPU{gpu.index} PCIe max G{gpu.pcie_gen_max}x{gpu.pcie_width_max}, {nv}\n")
    for warning in snapshot.warnings:
        if essentials_only and warning.severity == "info":
            continue
        out.append(
            f"{'!' if warning.severity != 'info' else 'i'} {warning.message}\n", style=SEVERITY_STYLE.get(warning.severity, "")
        )
    out.rstrip()
    return out


class TopologyPanel(Static):
    def __init__(self) -> None:
        super().__init__("", id="topology")
        self.border_title = "Interconnect"
        self._last_key: tuple[object, ...] | None = None

    def show(self, snapshot: RigSnapshot, matrix: bool = True, essentials_only: bool = False) -> None:
        key = (matrix, essentials_only, snapshot.warnings)  # topology is static; warnings and layout change
        if key != self._last_key:
            self._last_key = key
            self.update(topology_text(snapshot, matrix, essentials_only))
