"""Warnings that do not block a profile; each states its reason in one line.

These encode what owners of 24 GB consumer rigs learnt the hard way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rigctl.gpu.model import P2PCap, P2PStatus, RigInfo
from rigctl.gpu.topology import build_topology
from rigctl.profiles.schema import Diagnostic, Profile
from rigctl.profiles.settings import Setting
from rigctl.units import GIB
from rigctl.vllm.options import MTP_ALIASES, parse_human_int


def _value(settings: dict[str, Setting], dest: str, default: Any = None) -> Any:
    return settings[dest].value if dest in settings else default


def _key(settings: dict[str, Setting], dest: str) -> str:
    return f"vllm.{settings[dest].key}"


def _expandable(profile: Profile, settings: dict[str, Setting], rig: RigInfo | None) -> list[Diagnostic]:
    gmu = _value(settings, "gpu_memory_utilization")
    if gmu is None or float(gmu) < 0.975:
        return []
    if "expandable_segments:True" in str(profile.env.get("PYTORCH_CUDA_ALLOC_CONF", "")):
        return []
    return [
        profile.diagnostic(
            "warning",
            _key(settings, "gpu_memory_utilization"),
            'at 0.975 or more fragmentation leaves no slack: set env PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"',
        )
    ]


def _prefill_chunk(profile: Profile, settings: dict[str, Setting], rig: RigInfo | None) -> list[Diagnostic]:
    chunk = parse_human_int(_value(settings, "max_num_batched_tokens"))
    if chunk is None or chunk <= 2048 or int(_value(settings, "tensor_parallel_size", 1)) != 1 or rig is None:
        return []
    if not any(g.memory_total and 20 * GIB <= g.memory_total <= 26 * GIB for g in rig.gpus):
        return []
    return [
        profile.diagnostic(
            "warning",
            _key(settings, "max_num_batched_tokens"),
            f"{chunk:,} > 2,048 with TP=1 on a 24 GB card: a larger prefill chunk inflates the "
            "activation peak and shrinks the KV pool",
        )
    ]


def _dp_api_servers(profile: Profile, settings: dict[str, Setting], rig: RigInfo | None) -> list[Diagnostic]:
    dp = int(_value(settings, "data_parallel_size", 1))
    if dp <= 1 or _value(settings, "api_server_count") == 1:
        return []
    return [
        profile.diagnostic(
            "warning",
            _key(settings, "data_parallel_size"),
            f"data_parallel_size {dp} makes api_server_count default to {dp}: /metrics goes "
            "multiprocess and the console stats line stops; set api_server_count = 1",
        )
    ]


def _slow_tp_link(profile: Profile, settings: dict[str, Setting], rig: RigInfo | None) -> list[Diagnostic]:
    tp = int(_value(settings, "tensor_parallel_size", 1))
    if tp <= 1 or rig is None or len(rig.gpus) < tp:
        return []
    topology = build_topology(rig)
    used = rig.gpus[:tp]
    for a in used:
        for b in used:
            if a.index >= b.index or topology.nvlink_counts.get((a.index, b.index)):
                continue
            if topology.p2p.get((a.index, b.index, P2PCap.READ)) is P2PStatus.OK:
                continue
            slow = [g for g in (a, b) if (g.pcie_gen_max or 0) < 4 or (g.pcie_width_max or 0) < 16]
            if slow:
                which = ", ".join(f"GPU{g.index} Gen{g.pcie_gen_max} x{g.pcie_width_max}" for g in slow)
                return [
                    profile.diagnostic(
                        "warning",
                        _key(settings, "tensor_parallel_size"),
                        f"TP={tp} all-reduce crosses PCIe without NVLink or P2P, over a link "
                        f"below Gen4 x16 ({which}): every layer waits on host memory",
                    )
                ]
    return []


def _host(profile: Profile, settings: dict[str, Setting], rig: RigInfo | None) -> list[Diagnostic]:
    if "host" in settings or "uds" in settings:
        return []
    return [
        Diagnostic(
            "warning",
            "not set: vLLM binds all interfaces; rigctl renders --host 127.0.0.1 (set host to expose the server on purpose)",
            key="host",
            file=str(profile.path),
        )
    ]


def _mtp_alias(profile: Profile, settings: dict[str, Setting], rig: RigInfo | None) -> list[Diagnostic]:
    spec = _value(settings, "speculative_config")
    config = json.loads(spec) if isinstance(spec, str) else spec
    method = config.get("method") if isinstance(config, dict) else None
    if method not in MTP_ALIASES:
        return []
    return [
        profile.diagnostic(
            "warning",
            _key(settings, "speculative_config"),
            f'method {method!r} is a deprecated alias that vLLM rewrites to "mtp" with a warning: write method = "mtp"',
        )
    ]


def _fp8_on_ampere(profile: Profile, settings: dict[str, Setting], rig: RigInfo | None) -> list[Diagnostic]:
    dtype = _value(settings, "kv_cache_dtype")
    if dtype not in ("fp8", "fp8_e4m3") or rig is None:
        return []
    if not any("RTX 30" in g.name or "A100" in g.name or "RTX A" in g.name for g in rig.gpus):
        return []
    return [
        profile.diagnostic(
            "warning",
            _key(settings, "kv_cache_dtype"),
            f"{dtype} (e4m3) KV cache needs compute capability 8.9+; on Ampere cards such as the RTX 3090 use fp8_e5m2",
        )
    ]


def _pipeline_conflicts(profile: Profile, settings: dict[str, Setting], rig: RigInfo | None) -> list[Diagnostic]:
    if int(_value(settings, "pipeline_parallel_size", 1)) <= 1:
        return []
    out = []
    if _value(settings, "async_scheduling") is True:
        out.append(
            profile.diagnostic(
                "warning",
                _key(settings, "async_scheduling"),
                "vLLM refuses async scheduling with pipeline parallelism (a ValueError at start)",
            )
        )
    if "speculative_config" in settings:
        out.append(
            profile.diagnostic(
                "warning", _key(settings, "speculative_config"), "MTP acceptance collapses under pipeline parallelism; prefer TP"
            )
        )
    return out


def _split_size_with_expandable(profile: Profile, settings: dict[str, Setting], rig: RigInfo | None) -> list[Diagnostic]:
    conf = str(profile.env.get("PYTORCH_CUDA_ALLOC_CONF", ""))
    options = {part.split(":")[0].strip(): part.partition(":")[2].strip() for part in conf.split(",") if part.strip()}
    if "max_split_size_mb" not in options or options.get("expandable_segments", "").lower() != "true":
        return []
    return [
        profile.diagnostic(
            "warning",
            "env.PYTORCH_CUDA_ALLOC_CONF",
            "max_split_size_mb works against expandable_segments:True (it stops the allocator "
            "from growing the segments it was told to expand): keep expandable_segments alone",
        )
    ]


RULES: tuple[Callable[[Profile, dict[str, Setting], RigInfo | None], list[Diagnostic]], ...] = (
    _expandable,
    _prefill_chunk,
    _dp_api_servers,
    _slow_tp_link,
    _host,
    _mtp_alias,
    _fp8_on_ampere,
    _pipeline_conflicts,
    _split_size_with_expandable,
)


def lint(profile: Profile, settings: dict[str, Setting], rig: RigInfo | None) -> list[Diagnostic]:
    return [d for rule in RULES for d in rule(profile, settings, rig)]
