"""What a fit is asked about, read from a vLLM command line (a profile's rendered argv, or a
boot record's), and where the model's config.json and weights are on this machine."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rigctl.errors import BadInputError
from rigctl.vllm.argv import read_serve_argv
from rigctl.vllm.options import load_option_table, parse_human_int

NO_PREFIX_CACHING = ("--no-enable-prefix-caching", "--disable-prefix-caching")


@dataclass(frozen=True)
class LaunchOptions:
    """The `vllm serve` flags that size memory, with None for 'vLLM's default'."""

    model: str | None = None
    tp: int = 1
    dp: int = 1
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    kv_cache_dtype: str | None = None
    spec_tokens: int = 0  # MTP speculative tokens
    spec_other: str | None = None  # a speculative method this advisor does not model (a draft model)
    utilization: float | None = None
    batched_tokens: int | None = None
    eager: bool = False
    prefix_caching: bool = True
    block_size: int | None = None
    mamba_ssm_dtype: str | None = None
    kv_cache_memory_bytes: int | None = None
    quantization: str | None = None
    allow_long_max_len: bool = False  # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: past the model's maximum on purpose
    offload_gib: float = 0.0  # --kv-offloading-size: host RAM for KV, summed over the TP ranks (0.33)
    offload_backend: str | None = None  # --kv-offloading-backend (vLLM's default: native)
    notes: tuple[str, ...] = field(default_factory=tuple)

    def but(self, **changes: Any) -> LaunchOptions:
        """These options with the given ones replaced (None leaves a field as it is)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def _spec(text: str) -> tuple[int, str | None]:
    try:
        config = json.loads(text)
    except ValueError:
        return 0, f"--speculative-config {text!r} is not JSON"
    if not isinstance(config, dict):
        return 0, None
    method = str(config.get("method") or "")
    tokens = config.get("num_speculative_tokens")
    tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else 1
    if "mtp" in method:
        return tokens, None
    return 0, method or str(config.get("model") or "a draft model")


def options_from_launch(argv: list[str] | tuple[str, ...], env: dict[str, str]) -> LaunchOptions:
    """A command line and its environment: vLLM's CPU build takes its KV size in GiB from
    VLLM_CPU_KVCACHE_SPACE, which sizes the pool as --kv-cache-memory-bytes does."""
    options = options_from_argv(argv)
    if env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "").strip() in ("1", "true", "True"):
        options = options.but(allow_long_max_len=True)
    space = env.get("VLLM_CPU_KVCACHE_SPACE", "").strip()
    if space and options.kv_cache_memory_bytes is None:
        try:
            options = options.but(kv_cache_memory_bytes=int(float(space) * 2**30))
        except ValueError:
            pass
    return options


def options_from_argv(argv: list[str] | tuple[str, ...]) -> LaunchOptions:
    """`... serve MODEL --flag value ...` read as vLLM reads it (rigctl/vllm/argv.py: short forms,
    `=` forms, flags without a value), the memory flags kept."""
    read = read_serve_argv(argv, load_option_table())
    flags, model = read.flags, read.model

    def number(flag: str) -> int | None:
        return parse_human_int(flags[flag]) if flag in flags else None

    spec_tokens, spec_other = _spec(flags["--speculative-config"]) if "--speculative-config" in flags else (0, None)
    return LaunchOptions(
        model=model,
        tp=number("--tensor-parallel-size") or 1,
        dp=number("--data-parallel-size") or 1,
        max_model_len=number("--max-model-len"),
        max_num_seqs=number("--max-num-seqs"),
        kv_cache_dtype=flags.get("--kv-cache-dtype"),
        spec_tokens=spec_tokens,
        spec_other=spec_other,
        utilization=float(flags["--gpu-memory-utilization"]) if "--gpu-memory-utilization" in flags else None,
        batched_tokens=number("--max-num-batched-tokens"),
        eager="--enforce-eager" in flags,
        prefix_caching=not any(f in flags for f in NO_PREFIX_CACHING),
        block_size=number("--block-size"),
        mamba_ssm_dtype=flags.get("--mamba-ssm-cache-dtype"),
        kv_cache_memory_bytes=number("--kv-cache-memory-bytes"),
        quantization=flags.get("--quantization"),
        offload_gib=_gib(flags.get("--kv-offloading-size")),
        offload_backend=flags.get("--kv-offloading-backend"),
    )


def _gib(text: str | None) -> float:
    try:
        return max(0.0, float(text)) if text else 0.0
    except ValueError:
        return 0.0


def local_model_problem(model: str) -> str | None:
    """Why vLLM could not load `model` when it is written as a path on this machine (absolute,
    ~ or relative): it is not there, or it is a dir without a config. A Hugging Face id is not
    a path, and is never asked about here."""
    if not model.startswith(("/", "~", "./", "../")):
        return None
    path = Path(model).expanduser()
    try:
        if not path.exists():
            return f"{model}: no such file or directory on this machine"
        if path.is_dir() and not any((path / name).is_file() for name in ("config.json", "params.json")):
            return f"{model}: a directory without a config.json, not a model vLLM can load"
    except OSError as exc:
        return f"{model}: {exc.strerror or exc}"
    return None


def hub_cache() -> Path:
    """Where Hugging Face keeps downloaded models (HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def find_model_dir(model: str) -> Path | None:
    """A local model dir as given, else the newest snapshot of that id in the HF cache."""
    given = Path(model).expanduser()
    if (given / "config.json").is_file():
        return given
    entry = hub_cache() / ("models--" + model.replace("/", "--")) / "snapshots"
    snapshots = (
        sorted((p for p in entry.glob("*") if (p / "config.json").is_file()), key=lambda p: p.stat().st_mtime, reverse=True)
        if entry.is_dir()
        else []
    )
    return snapshots[0] if snapshots else None


def model_dir_or_error(model: str | None) -> Path:
    if not model:
        raise BadInputError("no model: name a profile, or give --config PATH or --model DIR")
    found = find_model_dir(model)
    if found is None:
        raise BadInputError(
            f"no config.json for {model}: it is not a local dir and not in the Hugging Face cache "
            f"({hub_cache()}); give --config PATH (the model's config.json)"
        )
    return found
