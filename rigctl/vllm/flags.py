"""The `vllm serve` flags rigctl reasons about, in one value named as vLLM names them (its
argparse dests), with vLLM's defaults for the ones it sizes by the card. `fit`, the memory model,
the simulator and the checked profile all hold this one value: no copy field by field, no second
spelling (`eager` vs `enforce_eager`).

A command line becomes one by `flags_from_argv`, through the parser built from the option table
(argv.py: short forms, `=` forms, `--no-X`, flags without a value), so `vllm serve M -tp 2` is
TP2 wherever rigctl reads it: a profile's launch, a boot record, a running process, the simulator.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rigctl.units import GIB
from rigctl.vllm.argv import read_serve_argv
from rigctl.vllm.options import OptionTable, load_option_table, parse_human_int

BIG_GPU = 70 * GIB  # vLLM picks larger scheduler defaults on cards at least this big
NO_PREFIX_CACHING = ("--no-enable-prefix-caching", "--disable-prefix-caching")
TRUE_WORDS = ("1", "true", "True")


@functools.cache
def default_gpu_memory_utilization() -> float:
    """vLLM's default, as its own parser declares it (0.92 in every wheel 0.20.1 to 0.33.0)."""
    option = load_option_table().options.get("gpu_memory_utilization")
    try:
        return float(option.default) if option is not None and option.default else 0.92
    except ValueError:
        return 0.92


def default_max_num_seqs(gpu_total: int) -> int:
    """vLLM's max_num_seqs when none is given (the OpenAI server's usage context)."""
    return 1024 if gpu_total >= BIG_GPU else 256


def default_batched_tokens(gpu_total: int) -> int:
    return 8192 if gpu_total >= BIG_GPU else 2048


def is_mtp(method: str | None) -> bool:
    """An MTP draft (`mtp`, `qwen3_next_mtp`, `deepseek_mtp`, ...): the only one whose memory and
    speed rigctl models."""
    return bool(method) and (method == "mtp" or str(method).endswith("_mtp"))


@dataclass(frozen=True)
class ServeFlags:
    """A `vllm serve` launch as far as rigctl models it; None is vLLM's default."""

    model: str | None = None
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1  # not modelled: a PP rank is sized as a TP rank
    data_parallel_size: int = 1
    quantization: str | None = None
    kv_cache_dtype: str | None = None  # None: auto
    max_model_len: int | None = None  # None: the model's own maximum
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None  # sizes the pool exactly: the budget step is skipped
    enforce_eager: bool = False
    speculative_method: str | None = None  # --speculative-config's "method" (or its draft "model")
    num_speculative_tokens: int = 0  # --speculative-config's
    async_scheduling: bool | None = None
    enable_prefix_caching: bool | None = None
    block_size: int | None = None
    mamba_ssm_cache_dtype: str | None = None
    kv_offloading_size: float | None = None  # GiB of host RAM for KV, summed over the TP ranks (0.33)
    kv_offloading_backend: str | None = None  # None: native
    allow_long_max_model_len: bool = False  # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: past the model's maximum on purpose

    @property
    def mtp_tokens(self) -> int:
        """Tokens drafted by an MTP head: the only draft whose memory and speed are modelled."""
        return self.num_speculative_tokens if is_mtp(self.speculative_method) else 0

    @property
    def unmodelled_draft(self) -> str | None:
        """A speculative method rigctl does not model (a draft model, n-gram, EAGLE)."""
        return self.speculative_method if self.speculative_method and not is_mtp(self.speculative_method) else None

    @property
    def prefix_caching(self) -> bool:
        return self.enable_prefix_caching is not False

    @property
    def utilization(self) -> float:
        return self.gpu_memory_utilization or default_gpu_memory_utilization()

    def seqs(self, gpu_total: int) -> int:
        return self.max_num_seqs or default_max_num_seqs(gpu_total)

    def chunk(self, gpu_total: int) -> int:
        return self.max_num_batched_tokens or default_batched_tokens(gpu_total)

    def but(self, **changes: Any) -> ServeFlags:
        """These flags with the given ones replaced (None leaves a field as it is)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _speculative(text: str) -> tuple[str | None, int]:
    """--speculative-config's method and tokens; vLLM drafts the head's own depth (1 for the
    Qwen3.5/3.6 MTP head) when num_speculative_tokens is left out."""
    try:
        config = json.loads(text)
    except ValueError:
        return None, 0
    if not isinstance(config, dict):
        return None, 0
    tokens = config.get("num_speculative_tokens")
    method = str(config.get("method") or config.get("model") or "") or None
    return method, tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else 1


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def flags_from_argv(argv: Sequence[str], env: Mapping[str, str] | None = None, table: OptionTable | None = None) -> ServeFlags:
    """`... serve MODEL --flag value ...` read as vLLM reads it, and the environment variables vLLM
    reads beside it: VLLM_ALLOW_LONG_MAX_MODEL_LEN, and VLLM_CPU_KVCACHE_SPACE (the CPU build's KV
    size in GiB, which sizes the pool as --kv-cache-memory-bytes does)."""
    read = read_serve_argv(argv, table or load_option_table())
    flags = read.flags

    def number(flag: str) -> int | None:
        value = parse_human_int(flags[flag]) if flag in flags else None
        return None if value is not None and value < 0 else value  # -1: auto

    def switch(flag: str, negatives: tuple[str, ...]) -> bool | None:
        return True if flag in flags else False if any(n in flags for n in negatives) else None

    method, tokens = _speculative(flags["--speculative-config"]) if "--speculative-config" in flags else (None, 0)
    env = env or {}
    kv_bytes = number("--kv-cache-memory-bytes")
    space = _float(env.get("VLLM_CPU_KVCACHE_SPACE", "").strip())
    if kv_bytes is None and space is not None:
        kv_bytes = int(space * GIB)
    offload = _float(flags.get("--kv-offloading-size"))
    return ServeFlags(
        model=read.model,
        tensor_parallel_size=number("--tensor-parallel-size") or 1,
        pipeline_parallel_size=number("--pipeline-parallel-size") or 1,
        data_parallel_size=number("--data-parallel-size") or 1,
        quantization=flags.get("--quantization") or None,
        kv_cache_dtype=flags.get("--kv-cache-dtype") or None,
        max_model_len=number("--max-model-len"),
        max_num_seqs=number("--max-num-seqs"),
        max_num_batched_tokens=number("--max-num-batched-tokens"),
        gpu_memory_utilization=_float(flags.get("--gpu-memory-utilization")),
        kv_cache_memory_bytes=kv_bytes,
        enforce_eager="--enforce-eager" in flags,
        speculative_method=method,
        num_speculative_tokens=tokens,
        async_scheduling=switch("--async-scheduling", ("--no-async-scheduling",)),
        enable_prefix_caching=switch("--enable-prefix-caching", NO_PREFIX_CACHING),
        block_size=number("--block-size"),
        mamba_ssm_cache_dtype=flags.get("--mamba-ssm-cache-dtype") or None,
        kv_offloading_size=max(0.0, offload) if offload is not None else None,
        kv_offloading_backend=flags.get("--kv-offloading-backend") or None,
        allow_long_max_model_len=env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "").strip() in TRUE_WORDS,
    )
