"""Rig descriptions shipped as data files (rigctl/sim/rigs/*.toml).

A RigSpec is the static truth of a simulated rig: the simulated backend serves it,
and the test suite's fake NVML library describes the same rig to the real NVML backend.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rigctl.errors import BadInputError
from rigctl.gpu.model import Gpu, NvLink, P2PCap, P2PStatus, RigInfo, normalise_bus_id
from rigctl.gpu.nvml_codes import board_pcie_width
from rigctl.units import MIB


@dataclass(frozen=True)
class ProcessSpec:
    pid: int
    name: str
    memory_bytes: int
    cmdline: str | None = None
    user: str | None = None


@dataclass(frozen=True)
class GpuSpec:
    index: int
    name: str
    uuid: str
    bus_id: str
    memory_total: int
    power_limit_w: float
    power_min_w: float
    power_max_w: float
    power_default_w: float
    idle_power_w: float
    pcie_gen_max: int
    pcie_width_max: int
    pcie_gpu_gen_max: int
    sm_clock_max: int
    mem_clock_max: int
    nvlink_peer: int | None = None
    nvlink_links: int = 0
    nvlink_version: str | None = None
    nvlink_speed_gbps: float | None = None
    processes: tuple[ProcessSpec, ...] = ()


@dataclass(frozen=True)
class PairSpec:
    gpus: tuple[int, int]
    pcie_path: str
    p2p: dict[P2PCap, P2PStatus]


@dataclass(frozen=True)
class RigSpec:
    name: str
    description: str
    gpus: tuple[GpuSpec, ...]
    pairs: tuple[PairSpec, ...] = ()
    driver_version: str = "580.95.05"
    cuda_driver_version: int = 13000
    nvml_version: str = "13.580.95.05"
    cpu_affinity: str = "0-15"
    numa_affinity: str = "0"
    source: str = field(default="", compare=False)

    def pair(self, a: int, b: int) -> PairSpec | None:
        for pair in self.pairs:
            if set(pair.gpus) == {a, b}:
                return pair
        return None

    def static_gpus(self) -> tuple[Gpu, ...]:
        by_index = {g.index: g for g in self.gpus}
        out = []
        for g in self.gpus:
            links: tuple[NvLink, ...] = ()
            if g.nvlink_peer is not None:
                peer_bus = by_index[g.nvlink_peer].bus_id
                links = tuple(
                    NvLink(link=n, active=True, version=g.nvlink_version, remote_bus_id=peer_bus, speed_gbps=g.nvlink_speed_gbps)
                    for n in range(g.nvlink_links)
                )
            out.append(
                Gpu(
                    index=g.index,
                    name=g.name,
                    uuid=g.uuid,
                    bus_id=g.bus_id,
                    memory_total=g.memory_total,
                    power_limit_w=g.power_limit_w,
                    power_min_w=g.power_min_w,
                    power_max_w=g.power_max_w,
                    power_default_w=g.power_default_w,
                    pcie_gen_max=g.pcie_gen_max,
                    pcie_width_max=g.pcie_width_max,
                    pcie_gpu_gen_max=g.pcie_gpu_gen_max,
                    pcie_gpu_width_max=board_pcie_width(g.name),
                    sm_clock_max=g.sm_clock_max,
                    mem_clock_max=g.mem_clock_max,
                    nvlinks=links,
                    persistence_mode=True,
                    cpu_affinity=self.cpu_affinity,
                    numa_affinity=self.numa_affinity,
                    gpu_numa_id=None,
                )
            )
        return tuple(out)

    def to_info(self, backend: str) -> RigInfo:
        paths = {}
        p2p: dict[tuple[int, int, P2PCap], P2PStatus | None] = {}
        for a in self.gpus:
            for b in self.gpus:
                if a.index == b.index:
                    continue
                pair = self.pair(a.index, b.index)
                if a.index < b.index:
                    paths[(a.index, b.index)] = pair.pcie_path if pair else "SYS"
                for cap in P2PCap:
                    p2p[(a.index, b.index, cap)] = pair.p2p.get(cap, P2PStatus.NS) if pair else P2PStatus.NS
        cuda = self.cuda_driver_version
        return RigInfo(
            backend=backend,
            gpus=self.static_gpus(),
            driver_version=self.driver_version,
            cuda_driver_version=f"{cuda // 1000}.{cuda % 1000 // 10}",
            nvml_version=self.nvml_version,
            pcie_paths=paths,
            p2p=p2p,
        )


def _rigs_dir() -> Any:
    return resources.files("rigctl.sim") / "rigs"


def list_rigs() -> list[RigSpec]:
    return [
        load_rig(entry.name[: -len(".toml")])
        for entry in sorted(_rigs_dir().iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".toml")
    ]


def rig_names() -> list[str]:
    return sorted(e.name[: -len(".toml")] for e in _rigs_dir().iterdir() if e.name.endswith(".toml"))


def load_rig(name_or_path: str) -> RigSpec:
    """A shipped rig by name, or any rig file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" and path.exists():
        return parse_rig(path.stem, path.read_text(), str(path))
    entry = _rigs_dir() / f"{name_or_path}.toml"
    if not entry.is_file():
        names = ", ".join(rig_names())
        raise BadInputError(f"no simulated rig named {name_or_path!r}; available: {names}")
    return parse_rig(name_or_path, entry.read_text(), f"rigs/{name_or_path}.toml")


def parse_rig(name: str, text: str, source: str) -> RigSpec:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInputError(f"{source}: {exc}") from exc
    try:
        gpus = tuple(_gpu(i, g) for i, g in enumerate(data["gpu"]))
        pairs = tuple(
            PairSpec(
                gpus=(int(p["gpus"][0]), int(p["gpus"][1])),
                pcie_path=str(p["pcie_path"]),
                p2p={P2PCap(k): P2PStatus(v) for k, v in p.get("p2p", {}).items()},
            )
            for p in data.get("pair", [])
        )
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        raise BadInputError(f"{source}: invalid rig description: {exc!r}") from exc
    return RigSpec(
        name=name,
        description=str(data.get("description", name)),
        gpus=gpus,
        pairs=pairs,
        driver_version=str(data.get("driver_version", "580.95.05")),
        cuda_driver_version=int(data.get("cuda_driver_version", 13000)),
        nvml_version=str(data.get("nvml_version", "13.580.95.05")),
        cpu_affinity=str(data.get("cpu_affinity", "0-15")),
        numa_affinity=str(data.get("numa_affinity", "0")),
        source=source,
    )


def _gpu(index: int, g: dict[str, Any]) -> GpuSpec:
    link = g.get("nvlink") or {}
    return GpuSpec(
        index=index,
        name=str(g["name"]),
        uuid=str(g["uuid"]),
        bus_id=normalise_bus_id(str(g["bus_id"])),
        memory_total=int(g["memory_total_mib"]) * MIB,
        power_limit_w=float(g["power_limit_w"]),
        power_min_w=float(g["power_min_w"]),
        power_max_w=float(g["power_max_w"]),
        power_default_w=float(g["power_default_w"]),
        idle_power_w=float(g["idle_power_w"]),
        pcie_gen_max=int(g["pcie_gen_max"]),
        pcie_width_max=int(g["pcie_width_max"]),
        pcie_gpu_gen_max=int(g["pcie_gpu_gen_max"]),
        sm_clock_max=int(g["sm_clock_max"]),
        mem_clock_max=int(g["mem_clock_max"]),
        nvlink_peer=int(link["peer"]) if link else None,
        nvlink_links=int(link.get("links", 0)),
        nvlink_version=link.get("version"),
        nvlink_speed_gbps=link.get("speed_gbps"),
        processes=tuple(
            ProcessSpec(
                pid=int(p["pid"]),
                name=str(p["name"]),
                memory_bytes=int(p["memory_mib"]) * MIB,
                cmdline=p.get("cmdline"),
                user=p.get("user"),
            )
            for p in g.get("processes", [])
        ),
    )
