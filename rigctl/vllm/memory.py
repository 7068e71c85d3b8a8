"""The memory of one vLLM worker (one rank of one replica): the budget it leaves for KV, predicted,
and the pool that budget buys. `rigctl fit` predicts with `plan_worker` and the simulator boots
with it, so a shipped profile's simulated boot and its prediction are the same figure.

    requested = total x gpu_memory_utilization          (vLLM checks it is free at start)
    available = requested - weights/TP - MTP head/TP - activation peak - non-torch - CUDA graphs - margin

The weights are the checkpoint's bytes when it is on disk (weights.py). The activation peak (a
profiled dummy forward of max_num_batched_tokens), the non-torch memory (NCCL buffers with TP, the
DP coordinator) and the CUDA-graph estimate vLLM deducts since 0.21 are the constants below, fitted
to the published deployments in tests/fit/test_budget.py (within 15% of each); where the rig has
boot records, fit/calibrate.py learns a correction from what the engine reported.

The MTP head. vLLM builds the draft module (qwen3_5_mtp.py: Qwen3_5MultiTokenPredictor) with an
`embed_tokens` and an `lm_head` of its own, vocab x hidden each, and then, in the proposer's
`load_model` (v1/spec_decode/eagle.py), an MTP draft - one without `has_own_embed_tokens` /
`has_own_lm_head`, which only EAGLE heads define - always takes the target model's embedding and
LM head and deletes its own ("Detected MTP model. Sharing target model embedding weights with the
draft model."), in every wheel rigctl supports (0.20.1 to 0.33.0). The weights vLLM measures after
loading therefore hold only the draft's decoder layer and its 2h -> h projection, unquantised: for
Qwen3.6-27B 0.79 GiB (0.40 GiB a rank at TP2). The "close to 4 GB" an owner measured on 2x4090 is
the head's own embedding and output layers (2 x 248,320 x 5,120 x bf16 = 4.7 GiB), which a sharing
vLLM never keeps; the owners' TP2+MTP pool (350,518 tokens) is reproduced with 0.79 GiB, not 4.

The draft's peak at load. Both figures hold, at different moments. The proposer's `load_model`
(vllm/v1/spec_decode/llm_base_proposer.py in 0.32, eagle.py before it) first builds and loads the
draft whole with `get_model` - `Qwen3_5MultiTokenPredictor` allocates its own vocab-parallel
`embed_tokens` and the MTP model its own `ParallelLMHead` (one tensor when the embeddings are tied),
vocab x hidden each in the model's dtype, split by TP - and only then (`_maybe_share_embeddings`,
`_maybe_share_lm_head`) deletes them for the target's. The GPU model runner loads the draft after
the target's weights (gpu_model_runner.py `load_model`: `self.drafter.load_model(self.model)`), so
for a moment a rank holds the target's weights, the draft's layer, the draft's own embedding and
LM head, the non-torch memory it took at start (NCCL, the all-reduce workspace) and its CUDA
context. Nothing caps that moment at gpu_memory_utilization: it fails only when the card runs out
(`memory_profiling` then empties torch's cache, so the freed 4.7 GiB is not held afterwards). That
peak against the card is the 4090 owner's "MTP does not fit on 24 GB" for a replica; the resident
0.79 GiB is what the pool pays for afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigctl.units import GIB
from rigctl.vllm.flags import ServeFlags, default_batched_tokens, default_gpu_memory_utilization
from rigctl.vllm.kvpool import Pool, PoolShape, pool, pool_shape
from rigctl.vllm.model import ModelDims
from rigctl.vllm.weights import Weights

# Fitted constants (GiB); see the module docstring.
ACTIVATION_BASE = 0.1
ACTIVATION_PER_1K_TOKENS = 0.2
ACTIVATION_SPLIT = 0.7  # with TP the profiled peak per rank is smaller
EAGER_ACTIVATION = 2.5  # no torch.compile fusion: the profiled peak keeps every intermediate
NON_TORCH = 0.2
NON_TORCH_TP = 2.8  # NCCL buffers and the custom all-reduce workspace
NON_TORCH_DP = 1.6
GRAPHS = 0.3
GRAPHS_MTP = 0.3
SAFETY = 150 / 1024
# A worker's CUDA context and torch's loaded kernels, held before its first tensor and outside the
# requested fraction (vLLM's budget starts from the free memory it finds after them). An estimate
# (CUDA 12 with lazy module loading on Ampere/Ada): no boot log says it.
CUDA_CONTEXT = 0.5
VOCAB_PADDING = 64  # vLLM's VocabParallelEmbedding pads the vocabulary to a multiple of 64


def draft_own_layers(dims: ModelDims, tp: int) -> float:
    """Bytes per rank of the MTP draft's own embedding and LM head while it loads (one tensor when
    the embeddings are tied), in the model's dtype; vLLM deletes them for the target's after."""
    if not dims.mtp_layers:
        return 0.0
    padded = -(-dims.vocab // VOCAB_PADDING) * VOCAB_PADDING
    return (1 if dims.tied_embeddings else 2) * padded * dims.hidden * dims.dtype_bytes / tp


@dataclass(frozen=True)
class WorkerBudget:
    total: int  # one GPU's memory
    requested: float  # total x gpu_memory_utilization
    weights: float  # per rank
    mtp_head: float
    activation: float
    non_torch: float
    graphs: float
    correction: float  # GiB added from the rig's boot records (0 without them)
    draft_own: float = 0.0  # the MTP draft's own embedding and LM head, held only while it loads

    @property
    def available(self) -> float:
        return (
            self.requested
            - self.weights
            - self.mtp_head
            - self.activation
            - self.non_torch
            - self.graphs
            - SAFETY * GIB
            + self.correction * GIB
        )

    @property
    def loads(self) -> bool:
        """The weights (and MTP head) fit in what vLLM may take of the card."""
        return self.weights + self.mtp_head < self.requested

    @property
    def load_peak(self) -> float:
        """What a rank holds at the moment its MTP draft has loaded and not yet given its own
        embedding and LM head up (without a draft: its weights, at start)."""
        return self.weights + self.mtp_head + self.draft_own + self.non_torch + CUDA_CONTEXT * GIB

    def load_margin(self, free: float | None = None) -> float:
        """What is left of the card (or of `free`, what the card had free at start) at the load's peak."""
        return (self.total if free is None else free) - self.load_peak

    def loads_on(self, free: float | None = None) -> bool:
        """The load's peak leaves the budget's margin of the card (or of `free`)."""
        return self.load_margin(free) >= SAFETY * GIB

    @property
    def after_boot(self) -> float:
        """What the worker holds on its GPU once serving: everything it deducted, and its KV."""
        return self.weights + self.mtp_head + self.activation + self.non_torch + self.graphs + max(self.available, 0)


def worker_budget(
    total: int,
    weights_total: float,
    mtp_total: float,
    tp: int,
    dp: int,
    *,
    utilization: float | None = None,
    batched_tokens: int | None = None,
    eager: bool = False,
    mtp: bool = False,
    correction_gib: float = 0.0,
    draft_own: float = 0.0,
) -> WorkerBudget:
    chunk = batched_tokens or default_batched_tokens(total)
    activation = (ACTIVATION_BASE + ACTIVATION_PER_1K_TOKENS * chunk / 1024) * (1.0 if tp == 1 else ACTIVATION_SPLIT)
    if eager:
        activation *= EAGER_ACTIVATION
    non_torch = NON_TORCH + (NON_TORCH_TP if tp > 1 else 0.0) + (NON_TORCH_DP if dp > 1 else 0.0)
    graphs = 0.0 if eager else GRAPHS + (GRAPHS_MTP if mtp else 0.0)
    requested = total * (utilization or default_gpu_memory_utilization())
    return WorkerBudget(
        total,
        requested,
        weights_total / tp,
        (mtp_total / tp) if mtp else 0.0,
        activation * GIB,
        non_torch * GIB,
        graphs * GIB,
        correction_gib,
        draft_own if mtp else 0.0,
    )


@dataclass(frozen=True)
class WorkerPlan:
    """One worker's memory as vLLM sizes it: the budget (None when the KV size is given) and the
    pool its KV memory buys."""

    budget: WorkerBudget | None
    shape: PoolShape
    available: int  # bytes for KV (may be <= 0: vLLM refuses to start)
    pool: Pool
    max_model_len: int


def model_max_len(dims: ModelDims, flags: ServeFlags) -> int:
    return flags.max_model_len or dims.max_position or 4096


def plan_worker(
    dims: ModelDims,
    weights: Weights,
    gpu_total: int,
    flags: ServeFlags,
    correction_gib: float = 0.0,
    available_kv_bytes: int | None = None,
) -> WorkerPlan:
    """The budget, then vLLM's exact bytes-to-blocks step. `available_kv_bytes` (a boot log's
    figure) or the flags' kv_cache_memory_bytes skip the budget."""
    shape = pool_shape(
        dims,
        flags.tensor_parallel_size,
        flags.kv_cache_dtype,
        flags.mtp_tokens,
        flags.prefix_caching,
        flags.block_size,
        flags.mamba_ssm_cache_dtype,
    )
    length = model_max_len(dims, flags)
    budget = None
    given = available_kv_bytes if available_kv_bytes is not None else flags.kv_cache_memory_bytes
    if given is not None:
        available = given
    else:
        budget = worker_budget(
            gpu_total,
            weights.main_bytes,
            weights.mtp_bytes,
            flags.tensor_parallel_size,
            flags.data_parallel_size,
            utilization=flags.utilization,
            batched_tokens=flags.max_num_batched_tokens,
            eager=flags.enforce_eager,
            mtp=flags.mtp_tokens > 0,
            correction_gib=correction_gib,
            draft_own=draft_own_layers(dims, flags.tensor_parallel_size),
        )
        available = int(budget.available)
    return WorkerPlan(budget, shape, available, pool(shape, max(available, 0), length), length)
