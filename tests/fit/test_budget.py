"""The budget step and the DP-vs-TP rule against what owners measured on real rigs.

Each row is a published deployment of the 27B hybrid (the pools the shipped profiles' comments
cite); its budget is what the exact KV step needs to give the measured pool. The prediction
from the profile's flags and the card's memory must land within 15% of it, and the pool too.
"""

from __future__ import annotations

import pytest

from rigctl.fit.advise import FitInputs, evaluate, layouts, recommend
from rigctl.sim.rigspec import load_rig
from rigctl.vllm.flags import ServeFlags
from rigctl.vllm.kvpool import pool_shape
from rigctl.vllm.model import dims_from_config, load_dims
from rigctl.vllm.weights import estimate, quant_family
from tests.fit.configs import config

GIB = 2**30
Q27 = load_dims(config("qwen3.6-27b"))

# (label, rig, tp, dp, quantization, kv dtype, max_model_len, MTP tokens, eager, extra, measured pool)
ROWS = [
    ("2x4090 W4A16 eager DP=2 (per replica) 32k", "2x4090-pcie", 1, 2, "awq_marlin", None, 32768, 0, True, {}, 38_229),
    ("2x4090 W4A16 graphs MTP3 TP=2 32k", "2x4090-pcie", 2, 1, "awq_marlin", "fp8", 32768, 3, False, {}, 350_518),
    ("2x3090 AutoRound W4A8 TP=2 131k", "2x3090-nvlink", 2, 1, "inc", "fp8_e5m2", 131072, 0, False, {}, 541_764),
    ("2x3090 AWQ TP=2 131k", "2x3090-nvlink", 2, 1, "awq_marlin", "fp8_e5m2", 131072, 0, False, {}, 610_212),
    ("2x3090 FP8 weights TP=2 131k", "2x3090-nvlink", 2, 1, "fp8", "fp8_e5m2", 131072, 0, False, {}, 272_338),
    (
        "1x3090 4-bit mbt 2048 180k",
        "1x3090",
        1,
        1,
        "awq_marlin",
        "fp8_e5m2",
        180000,
        0,
        False,
        {"batched_tokens": 2048, "utilization": 0.97, "max_num_seqs": 2},
        200_826,
    ),
]


def inputs(
    rig: str,
    quant: str,
    kv: str | None,
    length: int,
    spec: int,
    eager: bool,
    max_num_seqs: int = 8,
    batched_tokens: int | None = None,
    utilization: float = 0.92,
) -> FitInputs:
    gpus = load_rig(rig).gpus
    return FitInputs(
        Q27,
        estimate(Q27, quant_family(quant)),
        tuple(g.memory_total for g in gpus),
        ServeFlags(
            max_model_len=length,
            kv_cache_dtype=kv,
            speculative_method="mtp" if spec else None,
            num_speculative_tokens=spec,
            enforce_eager=eager,
            max_num_seqs=max_num_seqs,
            max_num_batched_tokens=batched_tokens,
            gpu_memory_utilization=utilization,
        ),
    )


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_the_budget_is_within_15_percent_of_what_the_measured_pool_needs(row: tuple) -> None:  # type: ignore[type-arg]
    label, rig, tp, dp, quant, kv, length, spec, eager, extra, measured = row
    fit = inputs(rig, quant, kv, length, spec, eager, **dict(extra))
    layout = evaluate(fit, tp, dp)
    assert layout.fits and layout.pool is not None and layout.budget is not None, layout.why_not
    shape = pool_shape(Q27, tp, kv, spec)
    needed = measured * shape.blocks_per_request(length) / length * shape.group_bytes  # bytes the pool implies
    assert abs(layout.budget.available / needed - 1) <= 0.15, (label, layout.budget.available / GIB, needed / GIB)
    assert abs(layout.pool.tokens / measured - 1) <= 0.15, (label, layout.pool.tokens, measured)


def test_a_27b_at_17_gb_on_two_24_gb_cards_is_split() -> None:
    fit = inputs("2x4090-pcie", "awq_marlin", "fp8", 32768, 3, False)
    found = layouts(fit)
    assert [(lay.tp, lay.dp) for lay in found] == [(1, 1), (1, 2), (2, 1)]
    advice = recommend(fit, found)
    assert advice is not None and (advice.tp, advice.dp) == (2, 1)
    assert advice.why.startswith("the weights take 16.9 of 24.0 GiB (70% of one GPU): split; TP2/DP1: ")
    split, replicas = found[2], found[1]
    assert split.pool and replicas.pool and split.pool.tokens > 4 * 2 * replicas.pool.tokens  # measured: 4.6x


def test_a_3b_on_two_24_gb_cards_keeps_replicas() -> None:
    small = load_dims(config("qwen2.5-3b"))
    gpus = tuple(g.memory_total for g in load_rig("2x4090-pcie").gpus)
    fit = FitInputs(small, estimate(small, "bf16"), gpus, ServeFlags(max_model_len=32768, max_num_seqs=64))
    advice = recommend(fit, layouts(fit))
    assert advice is not None and (advice.tp, advice.dp) == (1, 2)
    assert "under half a GPU, keep a replica per GPU" in advice.why


def test_layouts_that_cannot_fit_are_explained() -> None:
    one = tuple(g.memory_total for g in load_rig("1x3090").gpus)
    bf16 = FitInputs(Q27, estimate(Q27, "bf16"), one, ServeFlags(max_model_len=32768))
    layout = evaluate(bf16, 1, 1)
    assert (
        not layout.fits
        and layout.why_not
        and layout.why_not.startswith("the weights take 50.1 GiB per GPU, more than the 22.1 GiB vLLM may use")
    )
    assert recommend(bf16, [layout]) is None
    assert evaluate(bf16, 4, 1).why_not == "needs 4 GPUs; this rig has 1"
    four = tuple(g.memory_total for g in load_rig("2x3090-nvlink").gpus) * 2
    six_heads = dims_from_config(
        {"num_hidden_layers": 24, "num_attention_heads": 6, "num_key_value_heads": 2, "hidden_size": 768, "vocab_size": 32000},
        "six.json",
    )
    odd = evaluate(FitInputs(six_heads, estimate(six_heads, "bf16"), four), 4, 1)
    assert odd.why_not == "vLLM splits attention heads across TP ranks: 6 heads are not divisible by 4"
    assert evaluate(FitInputs(Q27, estimate(Q27, "int4"), four), 8, 1).why_not == "needs 8 GPUs; this rig has 4"


def test_too_many_sequences_for_the_state_is_refused_with_the_numbers() -> None:
    fit = inputs("2x3090-nvlink", "awq_marlin", "fp8_e5m2", 131072, 0, False, max_num_seqs=512)
    layout = evaluate(fit, 2, 1)
    assert not layout.fits and layout.pool is not None
    assert layout.why_not == (
        f"max_num_seqs (512) exceeds the {layout.pool.num_blocks} blocks the GDN state can "
        f"use: vLLM refuses to start (lower max_num_seqs to {layout.pool.num_blocks} or less)"
    )


def test_the_replicas_weighed_against_the_split_are_quoted_with_their_own_figure() -> None:
    """On two GPUs the split is weighed against TP1/DP2: the largest context a replica holds is
    DP2's own (each replica has less of its card than a lone TP1/DP1: the DP coordinator)."""
    fit = inputs("2x4090-pcie", "awq_marlin", "auto", 131072, 0, True)
    found = layouts(fit)
    replicas = next(lay for lay in found if (lay.tp, lay.dp) == (1, 2))
    alone = next(lay for lay in found if (lay.tp, lay.dp) == (1, 1))
    assert replicas.tiers[1] < alone.tiers[1]
    advice = recommend(fit, found)
    assert advice is not None and (advice.tp, advice.dp) == (2, 1)
    assert (
        f"a replica (TP1/DP2) holds the weights but not one 131,072-token request (max_model_len {replicas.tiers[1]:,}"
        in advice.why
    )
    assert f"{alone.tiers[1]:,}" not in advice.why
