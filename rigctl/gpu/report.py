"""RigSnapshot as JSON-ready data: numbers, not strings with units (the nvtop lesson)."""

from __future__ import annotations

from typing import Any

from rigctl.gpu.model import P2PCap, RigInfo, RigSnapshot, Topology, to_jsonable
from rigctl.gpu.topology import p2p_code


def topology_json(info: RigInfo, topo: Topology) -> dict[str, Any]:
    gpus = [g.index for g in info.gpus]
    return {
        "matrix": {f"GPU{i}": {f"GPU{j}": topo.labels[(i, j)] for j in gpus} for i in gpus},
        "nvlink_counts": {f"GPU{i}": {f"GPU{j}": topo.nvlink_counts.get((i, j), 0) for j in gpus if j != i} for i in gpus},
        "p2p": {cap.value: {f"GPU{i}": {f"GPU{j}": p2p_code(topo, i, j, cap) for j in gpus} for i in gpus} for cap in P2PCap},
        "vllm_fully_connected_nvlink": topo.fully_connected_nvlink,
    }


def snapshot_json(snapshot: RigSnapshot) -> dict[str, Any]:
    info = snapshot.info
    gpus = []
    for gpu in info.gpus:
        entry = to_jsonable(gpu)
        sample = snapshot.sample_for(gpu.index)
        entry["sample"] = to_jsonable(sample) if sample else None
        gpus.append(entry)
    return {
        "timestamp": snapshot.timestamp,
        "backend": info.backend,
        "driver_version": info.driver_version,
        "cuda_driver_version": info.cuda_driver_version,
        "nvml_version": info.nvml_version,
        "host": to_jsonable(snapshot.host),
        "gpus": gpus,
        "topology": topology_json(info, snapshot.topology),
        "warnings": [to_jsonable(w) for w in snapshot.warnings],
    }
