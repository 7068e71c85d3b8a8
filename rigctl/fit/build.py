"""From a command line's flags, a model dir and a rig's GPUs to the advisor's inputs."""

from __future__ import annotations

from pathlib import Path

from rigctl.fit.advise import FitInputs
from rigctl.units import GIB
from rigctl.vllm.flags import ServeFlags
from rigctl.vllm.model import ModelDims
from rigctl.vllm.weights import Weights, estimate, from_checkpoint, quant_family


def weights_for(dims: ModelDims, flags: ServeFlags, model_dir: Path | None, weights_gib: float | None = None) -> Weights:
    """--weights-gib when given, else the checkpoint's own bytes, else an estimate (labelled)."""
    if weights_gib is not None:  # the model's own weights; the MTP head is the draft's, estimated
        mtp = estimate(dims, "bf16").mtp_bytes if dims.mtp_layers else 0
        return Weights(int(weights_gib * GIB), mtp, "--weights-gib" + (" (MTP estimated)" if mtp else ""))
    found = from_checkpoint(model_dir) if model_dir is not None else None
    if found is not None:
        if not found.mtp_bytes and dims.mtp_layers:
            found = Weights(found.main_bytes, estimate(dims, "bf16").mtp_bytes, found.source + " (MTP estimated)")
        return found
    family = quant_family(flags.quantization or dims.quantization, flags.model or dims.name, dims.quant_bits)
    return estimate(dims, family)


def inputs_for(
    flags: ServeFlags,
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
    elif flags.kv_cache_memory_bytes is not None:
        available = flags.kv_cache_memory_bytes
    return FitInputs(
        model=dims,
        weights=weights,
        gpu_totals=gpu_totals,
        gpu_name=gpu_name,
        flags=flags,
        available_kv_bytes=available,
        available_is_logged=logged,
        correction_gib=correction_gib,
    )
