"""One vocabulary for vLLM's flags (rigctl/vllm/flags.py): the one reader of a command line agrees
with argparse, the library vLLM parses with, built from the same option table (the simulator's
parser, rigctl/sim/args.py), on every shipped profile's launch and on the spellings owners write;
and what vLLM leaves to its defaults is left to them."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rigctl.profiles.store import ProfileStore
from rigctl.profiles.vllm_args import render
from rigctl.sim.args import build_parser
from rigctl.units import GIB
from rigctl.vllm.flags import ServeFlags, default_gpu_memory_utilization, flags_from_argv, is_mtp
from rigctl.vllm.options import load_option_table

EXAMPLES = Path(__file__).resolve().parents[2] / "rigctl" / "profiles" / "examples"
SHIPPED = sorted(p.stem for p in EXAMPLES.glob("*.toml"))
MTP3 = '{"method": "mtp", "num_speculative_tokens": 3}'
OWNERS_LINES = [
    ["vllm", "serve", "M", "-tp", "2", "--max-model-len", "32k", "--enforce-eager"],
    ["vllm", "serve", "--enforce-eager", "M", "-dp=2", "--kv-cache-dtype=fp8", "--no-enable-prefix-caching"],
    ["vllm", "serve", "M", "-sc", MTP3, "--async-scheduling", "--gpu-memory-utilization", "0.95", "--max-num-seqs", "8"],
    ["vllm", "serve", "M", "--max-model-len", "-1", "--disable-prefix-caching", "--no-async-scheduling", "--block-size", "32"],
    ["vllm", "serve", "M", "--max-num-batched-tokens", "4096", "--mamba-ssm-cache-dtype", "float32", "--quantization", "awq"],
]


def by_argparse(argv: list[str]) -> argparse.Namespace:
    return build_parser(load_option_table()).parse_args(argv[argv.index("serve") + 1 :])


def assert_agree(flags: ServeFlags, ns: argparse.Namespace) -> None:
    spec = ns.speculative_config or {}
    max_len = None if ns.max_model_len in (None, -1) else ns.max_model_len
    assert flags.model == ns.model_tag
    assert flags.tensor_parallel_size == (ns.tensor_parallel_size or 1)
    assert flags.data_parallel_size == (ns.data_parallel_size or 1)
    assert flags.pipeline_parallel_size == (ns.pipeline_parallel_size or 1)
    assert (flags.max_model_len, flags.max_num_seqs, flags.max_num_batched_tokens) == (
        max_len,
        ns.max_num_seqs,
        ns.max_num_batched_tokens,
    )
    assert (flags.kv_cache_dtype, flags.quantization, flags.block_size, flags.mamba_ssm_cache_dtype) == (
        ns.kv_cache_dtype,
        ns.quantization,
        ns.block_size,
        ns.mamba_ssm_cache_dtype,
    )
    assert flags.gpu_memory_utilization == ns.gpu_memory_utilization
    assert flags.kv_cache_memory_bytes == ns.kv_cache_memory_bytes
    assert flags.enforce_eager == bool(ns.enforce_eager)
    assert (flags.async_scheduling, flags.enable_prefix_caching) == (ns.async_scheduling, ns.enable_prefix_caching)
    assert flags.speculative_method == (spec.get("method") or None)
    assert flags.num_speculative_tokens == (spec.get("num_speculative_tokens") or (1 if spec else 0))


@pytest.mark.parametrize("argv", OWNERS_LINES, ids=[" ".join(a[3:6]) for a in OWNERS_LINES])
def test_the_one_reader_agrees_with_argparse_on_the_spellings_owners_write(argv: list[str]) -> None:
    assert_agree(flags_from_argv(argv), by_argparse(argv))


@pytest.mark.parametrize("name", SHIPPED)
def test_the_one_reader_agrees_with_argparse_on_every_shipped_launch(name: str) -> None:
    argv = list(render(ProfileStore().load(name), load_option_table()).argv)
    assert_agree(flags_from_argv(argv), by_argparse(argv))


def test_what_is_not_given_is_vllms_default() -> None:
    flags = flags_from_argv(["vllm", "serve", "M"])
    assert flags == ServeFlags(model="M")
    assert flags.utilization == default_gpu_memory_utilization() and flags.prefix_caching
    assert (flags.seqs(24 * GIB), flags.chunk(24 * GIB)) == (256, 2048)  # vLLM's defaults below 70 GiB cards
    assert (flags.seqs(80 * GIB), flags.chunk(80 * GIB)) == (1024, 8192)


def test_only_an_mtp_draft_is_modelled() -> None:
    assert flags_from_argv(["vllm", "serve", "M", "-sc", MTP3]).mtp_tokens == 3
    depth = flags_from_argv(["vllm", "serve", "M", "-sc", '{"method": "qwen3_next_mtp"}'])
    assert depth.mtp_tokens == 1  # vLLM drafts the head's own depth when no count is given
    draft = flags_from_argv(["vllm", "serve", "M", "-sc", '{"model": "org/small-draft", "num_speculative_tokens": 4}'])
    assert (draft.mtp_tokens, draft.unmodelled_draft) == (0, "org/small-draft")
    assert [is_mtp(m) for m in ("mtp", "deepseek_mtp", "eagle", "ngram", None)] == [True, True, False, False, False]


def test_the_environment_vllm_reads_beside_its_flags() -> None:
    env = {"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "true"}
    flags = flags_from_argv(["vllm", "serve", "M"], env)
    assert flags.kv_cache_memory_bytes == 2 * GIB and flags.allow_long_max_model_len
    given = flags_from_argv(["vllm", "serve", "M", "--kv-cache-memory-bytes", "1G"], env)
    assert given.kv_cache_memory_bytes == 2**30  # the flag wins over the CPU build's variable
