"""The simulator's KV pools against what owners measured on real rigs (within 10%: it sizes memory
with rigctl/vllm's model, the one `rigctl fit` predicts with; the six land within -6.7% .. +3.6%).

Each row is a published deployment (27B hybrid, 16 of 64 layers full attention); the
config is what the matching shipped profile renders.
"""

from __future__ import annotations

import pytest

from rigctl.sim.memory import plan
from rigctl.sim.models import lookup
from rigctl.sim.rigspec import load_rig
from rigctl.vllm.flags import ServeFlags

AWQ = "Qwen/Qwen3.6-27B-AWQ"
ROWS = [
    (
        "2x4090 W4A16 eager DP=2 (per replica) 32k",
        "2x4090-pcie",
        ServeFlags(
            model=AWQ, data_parallel_size=2, quantization="awq_marlin", max_model_len=32768, enforce_eager=True, max_num_seqs=8
        ),
        38_229,
    ),
    (
        "2x4090 W4A16 CUDA graphs MTP3 TP=2 32k",
        "2x4090-pcie",
        ServeFlags(
            model=AWQ,
            tensor_parallel_size=2,
            quantization="awq_marlin",
            kv_cache_dtype="fp8",
            max_model_len=32768,
            speculative_method="mtp",
            num_speculative_tokens=3,
            max_num_seqs=8,
        ),
        350_518,
    ),
    (
        "2x3090 AutoRound W4A8 fp8 KV TP=2 131k",
        "2x3090-nvlink",
        ServeFlags(
            model="Intel/Qwen3.6-27B-int4-AutoRound",
            tensor_parallel_size=2,
            quantization="inc",
            kv_cache_dtype="fp8_e5m2",
            max_model_len=131072,
            max_num_seqs=8,
        ),
        541_764,
    ),
    (
        "2x3090 AWQ W4A16 fp8 KV TP=2 131k",
        "2x3090-nvlink",
        ServeFlags(
            model=AWQ,
            tensor_parallel_size=2,
            quantization="awq_marlin",
            kv_cache_dtype="fp8_e5m2",
            max_model_len=131072,
            max_num_seqs=8,
        ),
        610_212,
    ),
    (
        "2x3090 FP8 weights fp8 KV TP=2 131k",
        "2x3090-nvlink",
        ServeFlags(
            model="Qwen/Qwen3.6-27B-FP8",
            tensor_parallel_size=2,
            quantization="fp8",
            kv_cache_dtype="fp8_e5m2",
            max_model_len=131072,
            max_num_seqs=8,
        ),
        272_338,
    ),
    (
        "1x3090 4-bit mbt 2048 TP=1 180k",
        "1x3090",
        ServeFlags(
            model=AWQ,
            quantization="awq_marlin",
            kv_cache_dtype="fp8_e5m2",
            max_model_len=180000,
            max_num_batched_tokens=2048,
            gpu_memory_utilization=0.97,
            max_num_seqs=2,
        ),
        200_826,
    ),
]


@pytest.mark.parametrize("label,rig,cfg,measured", ROWS, ids=[r[0] for r in ROWS])
def test_kv_pool_within_10_percent_of_the_measured_one(label: str, rig: str, cfg: ServeFlags, measured: int) -> None:
    gpu = load_rig(rig).gpus[0]
    result = plan(lookup(cfg.model or ""), cfg, gpu.memory_total, gpu.memory_total - 333 * 2**20)
    assert result.failure is None
    assert abs(result.kv_tokens - measured) / measured <= 0.10, (label, result.kv_tokens, measured)


def test_split_beats_replicated_for_a_model_that_takes_half_a_card() -> None:
    """The lesson the two 4090 rows teach: TP frees memory that buys graphs, MTP and KV."""
    gpu = load_rig("2x4090-pcie").gpus[0]
    dp = plan(lookup(AWQ), ROWS[0][2], gpu.memory_total, gpu.memory_total)
    tp = plan(lookup(AWQ), ROWS[1][2], gpu.memory_total, gpu.memory_total)
    # measured: 350,518 against 2 x 38,229 = 4.6 times the pool of both replicas together
    assert tp.kv_tokens > 3 * (2 * dp.kv_tokens)
