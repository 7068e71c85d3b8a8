"""Why a vLLM boot failed, from the line that says so: a cause, one line for the owner, a hint.

The patterns are vLLM's own messages (GPU and CPU builds, 0.6 to 0.33). Several lines of a
failed boot usually match: the generic ones (engine core failed, a crash) follow the real
cause, so the earliest specific one wins (`most_specific`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

LogCause = Literal[
    "max_model_len",
    "model_max_len",
    "max_num_seqs",
    "foreign_vram",
    "cpu_memory",
    "oom_load",
    "oom_sampler",
    "oom",
    "no_kv_memory",
    "unknown_flag",
    "port_in_use",
    "gpu_count",
    "unsupported_gpu",
    "bad_quantization",
    "signal",
    "crash",
    "engine_core",
]
# what rigctl itself saw go wrong around a boot, where no log line says why
OwnCause = Literal[
    "killed", "exited", "interrupted", "unauthorized", "timeout", "launch", "state", "internal", "verify", "disk_full", "apps"
]
Cause = LogCause | OwnCause


@dataclass(frozen=True)
class Failure:
    cause: Cause
    summary: str  # one line for the owner
    line: str  # the log line that explains it
    suggestion: str | None = None
    max_model_len: int | None = None
    estimated_max_len: int | None = None


def _n(text: str | None) -> int | None:
    return None if text is None else int(float(text.replace(",", "")))


FAILURES: tuple[tuple[LogCause, re.Pattern[str]], ...] = (
    ("max_model_len", re.compile(r"To serve at least one request with the models?'s max seq len \((?P<len>\d+)\)")),
    (
        "max_model_len",
        re.compile(
            r"The model's max seq len \((?P<len>\d+)\) is larger than the maximum number of "
            r"tokens that can be stored in KV cache \((?P<est>\d+)\)"
        ),
    ),
    # pydantic's ValidationError: the reason is this line; the last line is only a pydantic URL
    (
        "model_max_len",
        re.compile(
            r"User-specified max_model_len \((?P<len>\d+)\) is greater than the derived "
            r"max_model_len \((?:max_position_embeddings=(?P<max>[\d.]+))?"
        ),
    ),
    (
        "foreign_vram",
        re.compile(
            r"Free memory on device (?P<dev>\S+) \((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on "
            r"startup is less than desired GPU memory utilization \((?P<gmu>[\d.]+), "
            r"(?P<want>[\d.]+) GiB\)"
        ),
    ),
    (
        "cpu_memory",
        re.compile(
            r"Available memory on node (?P<node>\d+) \((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on "
            r"startup is less than desired CPU memory utilization \((?P<gmu>[\d.]+), "
            r"(?P<want>[\d.]+) GiB\)"
        ),
    ),
    ("oom_load", re.compile(r"Failed to load model - not enough GPU memory")),
    ("oom_sampler", re.compile(r"CUDA out of memory occurred when warming up sampler")),
    ("oom", re.compile(r"OutOfMemoryError: CUDA out of memory|CUDA out of memory\. Tried to allocate")),
    (
        "max_num_seqs",
        re.compile(
            r"max_num_seqs \((?P<seqs>\d+)\) exceeds available Mamba cache blocks "
            r"\((?P<blocks>\d+)\)"
        ),
    ),
    ("no_kv_memory", re.compile(r"No available memory for the cache blocks|Cannot auto-fit max_model_len")),
    ("unknown_flag", re.compile(r"error: (?:unrecognized arguments: (?P<args>.*)|ambiguous option: (?P<amb>.*))")),
    ("port_in_use", re.compile(r"\[Errno 98\] Address already in use|address already in use")),
    ("gpu_count", re.compile(r"World size \((?P<need>\d+)\) is larger than the number of available GPUs")),
    ("unsupported_gpu", re.compile(r"no kernel image is available|not supported on compute capability")),
    ("bad_quantization", re.compile(r"Unknown quantization method: (?P<q>\S+)")),
    # a signal that reached the engine while it booted (after ready, the same line is a normal stop)
    ("signal", re.compile(r"trigger received signal=(?P<sig>SIG\w+)")),
    ("crash", re.compile(r"Fatal Python error: (?P<what>.*)|Segmentation fault|core dumped")),
    ("engine_core", re.compile(r"Engine core initialization failed|EngineCore failed to start")),
)
GENERIC: tuple[LogCause, ...] = ("engine_core", "crash", "oom")
_TABLE: dict[LogCause, tuple[str, str | None]] = {
    "oom_load": (
        "CUDA out of memory while loading the weights",
        ("use a smaller quantisation, raise tensor_parallel_size, or lower gpu_memory_utilization"),
    ),
    "oom_sampler": ("CUDA out of memory while warming up the sampler", "lower max_num_seqs"),
    "oom": (
        "CUDA out of memory",
        ("lower max_num_batched_tokens or gpu_memory_utilization, or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
    ),
    "no_kv_memory": (
        "no memory left for the KV cache after weights and activations",
        "raise gpu_memory_utilization or use smaller weights",
    ),
    "port_in_use": ("the port is already in use", "stop what listens there or change port"),
    "unsupported_gpu": ("a kernel does not support this GPU", "choose another quantization or kv_cache_dtype"),
    "crash": ("the engine process crashed", None),
    "engine_core": ("the engine core failed to start", None),
}


def classify_line(message: str, kv_explicit: bool = False) -> Failure | None:
    """`kv_explicit`: the KV size was set (kv_cache_memory_bytes, VLLM_CPU_KVCACHE_SPACE), so
    gpu_memory_utilization cannot make room and a hint must not say it does."""
    for cause, pattern in FAILURES:
        match = pattern.search(message)
        if match:
            return _explain(cause, match, message, kv_explicit)
    return None


def _explain(cause: LogCause, m: re.Match[str], line: str, kv_explicit: bool) -> Failure:
    g = m.groupdict()
    if cause == "max_model_len":
        est = g.get("est") or (re.search(r"estimated maximum model length is (\d+)", line) or [None, None])[1]
        length, estimate = _n(g.get("len")), _n(est)
        more = (
            "raise the KV size you set (kv_cache_memory_bytes, or VLLM_CPU_KVCACHE_SPACE on the CPU build)"
            if kv_explicit
            else "raise gpu_memory_utilization"
        )
        hint = f"set max_model_len to {estimate:,} or less, or {more}" if estimate else f"lower max_model_len or {more}"
        return Failure(
            cause,
            f"max_model_len {length:,} needs more KV cache than fits" + (f"; vLLM estimates {estimate:,} fits" if estimate else ""),
            line,
            hint,
            length,
            estimate,
        )
    if cause == "model_max_len":
        length, ceiling = _n(g.get("len")), _n(g.get("max"))
        said = f"max_model_len {length:,} is more than the model allows"
        if ceiling:
            said += f" (max_position_embeddings {ceiling:,} in its config.json)"
        hint = (
            f"set max_model_len to {ceiling:,} or less" if ceiling else "lower max_model_len"
        ) + " (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 overrides it, at the risk of wrong output)"
        return Failure(cause, said, line, hint, length, ceiling)
    if cause == "foreign_vram":
        return Failure(
            cause,
            f"{g['dev']} had {g['free']} of {g['total']} GiB free at start, but "
            f"gpu_memory_utilization {g['gmu']} wants {g['want']} GiB: other processes hold VRAM",
            line,
            "stop the processes holding VRAM (rigctl status lists them) or lower gpu_memory_utilization",
        )
    if cause == "cpu_memory":
        return Failure(
            cause,
            f"NUMA node {g['node']} had {g['free']} of {g['total']} GiB free, but "
            f"gpu_memory_utilization {g['gmu']} (on the CPU build, a share of this memory) wants "
            f"{g['want']} GiB",
            line,
            "set VLLM_CPU_KVCACHE_SPACE (GiB of KV cache) in the profile's [env], or lower gpu_memory_utilization",
        )
    if cause == "unknown_flag":
        args = (g.get("args") or g.get("amb") or "").strip()
        return Failure(
            cause,
            f"vLLM does not accept {args}",
            line,
            "remove or rename the option (`rigctl profile validate` names removed options)",
        )
    if cause == "signal":
        return Failure(
            cause,
            f"stopped by {g['sig']} while it booted",
            line,
            "something stopped it (another rigctl, systemd, the OOM killer): see `dmesg | tail`",
        )
    if cause == "max_num_seqs":
        return Failure(
            cause,
            f"max_num_seqs {g['seqs']} is more than the {g['blocks']} blocks the GDN state can use",
            line,
            f"set max_num_seqs to {g['blocks']} or less, or give the pool more memory",
        )
    if cause == "gpu_count":
        return Failure(
            cause,
            f"the profile needs {g.get('need')} GPUs and fewer are visible",
            line,
            "lower tensor/data parallel sizes or check CUDA_VISIBLE_DEVICES",
        )
    if cause == "bad_quantization":
        return Failure(cause, f"vLLM does not know quantization {g.get('q')}", line, "check the quantization value")
    summary, suggestion = _TABLE[cause]
    return Failure(cause, summary, line, suggestion)


def capped(failure: Failure, model_max: int | None) -> Failure:
    """A KV-too-small failure's fix, never past what the model allows: vLLM estimates the length the
    pool would hold (655,200 for a 1M context on 2x24 GB), not what the model takes (262,144)."""
    estimate = failure.estimated_max_len
    if failure.cause != "max_model_len" or not model_max or not estimate or estimate <= model_max:
        return failure
    return Failure(
        failure.cause,
        failure.summary,
        failure.line,
        f"set max_model_len to {model_max:,} or less (the model's maximum, max_position_embeddings; "
        f"the pool would hold {estimate:,})",
        failure.max_model_len,
        model_max,
    )


def most_specific(candidates: list[Failure]) -> Failure:
    """The engine-core and crash lines follow the real cause; prefer the earliest specific one."""
    for failure in candidates:
        if failure.cause not in GENERIC:
            return failure
    for cause in ("oom", "crash", "engine_core"):
        for failure in candidates:
            if failure.cause == cause:
                return failure
    return candidates[0]
