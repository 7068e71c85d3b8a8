"""How a simulated vLLM sizes its KV cache, following vLLM's own accounting:

    budget    = total x gpu_memory_utilization           (must be free at start)
    non-KV    = weights/(TP*PP) + MTP head/TP + activation peak + non-torch + CUDA graphs
    KV memory = budget - non-KV - 150 MiB                 (or exactly kv_cache_memory_bytes)

Hybrid models hold KV only in their full-attention layers, plus a recurrent state per
sequence (times 1+k with k speculative tokens); their reported "KV cache size" is
max concurrency x max_model_len, as vLLM reports it.

The activation, non-torch and graph constants were fitted to six published deployments
(tests/sim/test_calibration.py lists them); the results land within 25% of each.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rigctl.sim.models import ModelSpec, quant_family
from rigctl.units import GIB, MIB

SAFETY = 150 * MIB
BIG_GPU = 70 * GIB  # vLLM picks larger scheduler defaults on cards at least this big


@dataclass(frozen=True)
class EngineConfig:
    """The flags of `vllm serve` the simulation responds to, with vLLM's defaults."""

    model: str
    tp: int = 1
    pp: int = 1
    dp: int = 1
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    max_model_len: int | None = None  # None: the model's own
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    gpu_memory_utilization: float = 0.92
    kv_cache_memory_bytes: int | None = None
    enforce_eager: bool = False
    spec_method: str | None = None
    spec_tokens: int = 0
    async_scheduling: bool | None = None
    enable_prefix_caching: bool | None = None

    def seqs(self, gpu_total: int) -> int:
        return self.max_num_seqs or (1024 if gpu_total >= BIG_GPU else 256)

    def chunk(self, gpu_total: int) -> int:
        return self.max_num_batched_tokens or (8192 if gpu_total >= BIG_GPU else 2048)


@dataclass(frozen=True)
class MemoryPlan:
    total: int
    free_at_start: int
    budget: int
    weights: float
    mtp_head: float
    activation: float
    non_torch: float
    graphs: float
    kv_memory: float
    kv_bytes_per_token: float
    state_bytes_per_seq: float
    max_model_len: int
    kv_tokens: int  # what vLLM logs as "GPU KV cache size"
    concurrency: float
    block_size: int
    failure: str | None  # foreign_vram | oom_load | no_kv_memory | max_model_len
    estimated_max_len: int | None = None

    @property
    def used_after_boot(self) -> float:
        """What the engine holds on each GPU once serving (the budget, as vLLM allocates it)."""
        return self.weights + self.mtp_head + self.non_torch + self.graphs + max(self.kv_memory, 0) + self.activation


def kv_bytes_per_token(model: ModelSpec, cfg: EngineConfig) -> float:
    width = 1 if cfg.kv_cache_dtype.startswith(("fp8", "int8", "nvfp4")) else 2
    heads = max(1, model.kv_heads // cfg.tp)  # KV heads are replicated when fewer than TP ranks
    layers = model.full_attention_layers / cfg.pp
    return layers * heads * model.head_dim * 2 * width


def plan(model: ModelSpec, cfg: EngineConfig, total: int, free: int) -> MemoryPlan:
    family = quant_family(cfg.quantization, cfg.model)
    weights = model.weight_bytes[family] / (cfg.tp * cfg.pp)
    mtp = model.mtp_head_bytes / cfg.tp if cfg.spec_method in ("mtp",) or (cfg.spec_method or "").endswith("_mtp") else 0.0
    chunk = cfg.chunk(total)
    activation = (0.25 + 0.25 * chunk / 1024) * GIB * (1.0 if cfg.tp == 1 else 0.7)
    if cfg.enforce_eager:
        activation *= 2.5  # no torch.compile fusion: the profiled peak keeps every intermediate
    non_torch = (0.3 + (2.8 if cfg.tp > 1 else 0.0) + (1.2 if cfg.dp > 1 else 0.0)) * GIB
    graphs = 0.0 if cfg.enforce_eager else (0.35 + (0.3 if mtp else 0.0)) * GIB
    budget = int(total * cfg.gpu_memory_utilization)
    max_len = cfg.max_model_len or model.max_position
    kv_bpt = kv_bytes_per_token(model, cfg)
    state = model.gdn_state_bytes / cfg.tp * (1 + cfg.spec_tokens)
    # Hybrid models pad the attention block so one page holds a recurrent state (vLLM logs
    # "Setting attention block size to N tokens"); prefix caching reuses whole blocks only.
    recurrent_layers = model.layers - model.full_attention_layers
    block = 16 if not model.hybrid else int(math.ceil(state / (1 + cfg.spec_tokens) / recurrent_layers
                                                          / (kv_bpt / model.full_attention_layers) / 16) * 16)
    common: dict[str, Any] = {"total": total, "free_at_start": free, "budget": budget, "weights": weights, "mtp_head": mtp,
                  "activation": activation, "non_torch": non_torch, "graphs": graphs, "kv_bytes_per_token": kv_bpt,
                  "state_bytes_per_seq": state, "max_model_len": max_len, "block_size": block}
    if free < budget and cfg.kv_cache_memory_bytes is None:
        return MemoryPlan(**common, kv_memory=0.0, kv_tokens=0, concurrency=0.0, failure="foreign_vram")
    if weights + mtp > free - 0.5 * GIB:
        return MemoryPlan(**common, kv_memory=0.0, kv_tokens=0, concurrency=0.0, failure="oom_load")
    if cfg.kv_cache_memory_bytes is not None:
        kv_memory = float(cfg.kv_cache_memory_bytes)
    else:
        kv_memory = budget - weights - mtp - activation - non_torch - graphs - SAFETY
    if kv_memory <= 0:
        return MemoryPlan(**common, kv_memory=kv_memory, kv_tokens=0, concurrency=0.0, failure="no_kv_memory")
    per_request = max_len * kv_bpt + state
    concurrency = kv_memory / per_request
    if concurrency < 1.0:
        estimate = int((kv_memory - state) / kv_bpt) // block * block
        return MemoryPlan(**common, kv_memory=kv_memory, kv_tokens=0, concurrency=concurrency,
                          failure="max_model_len", estimated_max_len=max(0, estimate))
    if model.hybrid:
        tokens = int(concurrency * max_len)
    else:
        tokens = int(kv_memory / kv_bpt) // block * block
        concurrency = tokens / max_len
    return MemoryPlan(**common, kv_memory=kv_memory, kv_tokens=tokens, concurrency=concurrency, failure=None)
