"""From a command line's options, a model dir and a rig's GPUs to the advisor's inputs."""

from __future__ import annotations

from pathlib import Path

from rigctl.fit.advise import FitInputs
from rigctl.fit.inputs import LaunchOptions
from rigctl.units import GIB
from rigctl.vllm.memory import default_gpu_memory_utilization
from rigctl.vllm.model import ModelDims
from rigctl.vllm.weights import Weights, estimate, from_checkpoint, quant_family


def weights_for(dims: ModelDims, options: LaunchOptions, model_dir: Path | None, weights_gib: float | None = None) -> Weights:
    """--weights-gib when given, else the checkpoint's own bytes, else an estimate (labelled)."""
    if weights_gib is not None:  # the model's own weights; the MTP head is the draft's, estimated
        mtp = estimate(dims, "bf16").mtp_bytes if dims.mtp_layers else 0
        return Weights(int(weights_gib * GIB), mtp, "--weights-gib" + (" (MTP estimated)" if mtp else ""))
    found = from_checkpoint(model_dir) if model_dir is not None else None
    if found is not None:
        if not found.mtp_bytes and dims.mtp_layers:
            found = Weights(found.main_bytes, estimate(dims, "bf16").mtp_bytes, found.source + " (MTP estimated)")
        return found
    family = quant_family(options.quantization or dims.quantization, options.model or dims.name, dims.quant_bits)
    return estimate(dims, family)


def inputs_for(
    options: LaunchOptions,
    dims: ModelDims,
    weights: Weights,
    gpu_totals: tuple[int, ...],
    gpu_name: str = "GPU",
    correction_gib: float = 0.0,
    available_kv_gib: float | None = None,
) -> FitInputs:
    """A logged available KV (--available-kv-gib) or the profile's explicit KV size skips the budget."""
    available, logged = None, False
    if available_kv_gib is not None:
        available, logged = int(available_kv_gib * GIB), True
    elif options.kv_cache_memory_bytes is not None:
        available = options.kv_cache_memory_bytes
    return FitInputs(
        model=dims,
        weights=weights,
        gpu_totals=gpu_totals,
        gpu_name=gpu_name,
        max_model_len=options.max_model_len,
        max_num_seqs=options.max_num_seqs,
        kv_cache_dtype=options.kv_cache_dtype,
        spec_tokens=options.spec_tokens,
        utilization=options.utilization or default_gpu_memory_utilization(),
        batched_tokens=options.batched_tokens,
        eager=options.eager,
        prefix_caching=options.prefix_caching,
        block_size=options.block_size,
        mamba_ssm_dtype=options.mamba_ssm_dtype,
        available_kv_bytes=available,
        available_is_logged=logged,
        correction_gib=correction_gib,
    )
