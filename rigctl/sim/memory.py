"""How a simulated vLLM sizes its memory: rigctl/vllm's model of one worker (the one `rigctl fit`
predicts with), and what the simulator adds - the free memory it finds at start, and which of
vLLM's refusals a plan runs into:

    foreign_vram   less is free than total x gpu_memory_utilization (vLLM's start-up check)
    oom_load       the weights (with an MTP draft's own embedding and LM head) do not load
    no_kv_memory   nothing is left for KV
    max_model_len  one full-length request does not fit the pool
    max_num_seqs   more sequences than the blocks the GDN state may use (hybrid models)

Pipeline parallelism is not modelled (neither is it by `fit`): a PP rank is sized as a TP rank.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from rigctl.sim.models import ModelSpec
from rigctl.units import GIB
from rigctl.vllm.flags import ServeFlags
from rigctl.vllm.memory import CUDA_CONTEXT, SAFETY, draft_own_layers, plan_worker
from rigctl.vllm.weights import estimate, quant_family

Failure = Literal["foreign_vram", "oom_load", "no_kv_memory", "max_model_len", "max_num_seqs"]


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
    kv_bytes_per_token: float  # one token of every attention layer on one rank
    state_bytes_per_seq: float
    max_model_len: int
    kv_tokens: int  # what vLLM logs as "GPU KV cache size"
    concurrency: float
    block_size: int
    context_tokens: int  # tokens of context the pool's blocks hold, every block given to attention
    failure: Failure | None
    estimated_max_len: int | None = None
    mamba_blocks: int | None = None

    @property
    def used_after_boot(self) -> float:
        """What the engine holds on each GPU once serving (the budget, as vLLM allocates it)."""
        return self.weights + self.mtp_head + self.non_torch + self.graphs + max(self.kv_memory, 0) + self.activation


def plan(model: ModelSpec, cfg: ServeFlags, total: int, free: int) -> MemoryPlan:
    dims = model.dims
    weights = estimate(dims, quant_family(cfg.quantization or dims.quantization, cfg.model or "", dims.quant_bits))
    worker = plan_worker(dims, weights, total, cfg)
    shape, pool = worker.shape, worker.pool
    budget = worker.budget
    per_group = -(-shape.attention_layers // shape.groups) if shape.linear_layers else 1
    plan0 = MemoryPlan(
        total=total,
        free_at_start=free,
        budget=int(total * cfg.utilization),
        weights=budget.weights if budget else weights.main_bytes / cfg.tensor_parallel_size,
        mtp_head=budget.mtp_head if budget else 0.0,
        activation=budget.activation if budget else 0.0,
        non_torch=budget.non_torch if budget else 0.0,
        graphs=budget.graphs if budget else 0.0,
        kv_memory=float(worker.available),
        kv_bytes_per_token=float(shape.attention_token_bytes * shape.attention_layers),
        state_bytes_per_seq=float(pool.state_bytes_per_seq),
        max_model_len=worker.max_model_len,
        kv_tokens=pool.tokens,
        concurrency=pool.max_concurrency,
        block_size=shape.block_size,
        context_tokens=pool.num_blocks // per_group * shape.block_size,
        failure=None,
        mamba_blocks=pool.mamba_blocks,
    )
    if free < plan0.budget and cfg.kv_cache_memory_bytes is None:
        return replace(plan0, failure="foreign_vram")
    # the load's peak (the MTP draft holds its own embedding and LM head until it takes the
    # target's) against what the card had free: vLLM's limit there is the card, not the fraction
    draft = draft_own_layers(dims, cfg.tensor_parallel_size) if cfg.mtp_tokens else 0.0
    peak = budget.load_peak if budget else plan0.weights + plan0.mtp_head + draft + CUDA_CONTEXT * GIB
    if free - peak < SAFETY * GIB:
        return replace(plan0, failure="oom_load")
    if worker.available <= 0:
        return replace(plan0, failure="no_kv_memory", kv_tokens=0, concurrency=0.0)
    if not pool.fits_one_request:
        return replace(plan0, failure="max_model_len", kv_tokens=0, estimated_max_len=pool.max_len_for(1))
    if pool.mamba_blocks is not None and cfg.seqs(total) > pool.mamba_blocks:
        return replace(plan0, failure="max_num_seqs")
    return plan0
