"""Weight bytes: read from the checkpoint when it is on disk, else estimated and labelled so.

The safetensors headers (8 bytes of length, then JSON naming every tensor's dtype and shape)
are read without loading a tensor, so the bytes of the language model, of its MTP head and of
a vision tower are known apart: vLLM loads the MTP weights only with speculative decoding.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

from rigctl.fit.model import ModelDims

SAFETENSORS_BYTES = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
                     "F8_E4M3": 1, "F8_E5M2": 1, "I8": 1, "U8": 1, "BOOL": 1, "F4": 0.5, "F8_E8M0": 1}
# Bytes per parameter of the quantised linear layers (scales and zeros included); embeddings and
# the LM head stay at the model dtype in these checkpoints.
LINEAR_BYTES = {"int4": 0.50, "w4a8": 0.62, "fp4": 0.56, "fp8": 1.02, "int8": 1.02, "bf16": 2.0}
GIB = 1024**3


@dataclass(frozen=True)
class Weights:
    main_bytes: int  # what the target model loads (all ranks together)
    mtp_bytes: int  # the MTP head's own tensors
    source: str  # "safetensors headers" | "safetensors index" | "--weights-gib" | "estimate (...)"

    @property
    def measured(self) -> bool:
        return not self.source.startswith("estimate")


def quant_family(quantization: str | None, model: str = "", bits: int | None = None) -> str:
    """The weight format from vLLM's --quantization, the checkpoint's quant_method, or its name."""
    q = (quantization or "").lower()
    name = model.lower()
    if q == "inc" or "w4a8" in name:
        return "w4a8"
    if q in ("awq", "awq_marlin", "gptq", "gptq_marlin", "auto-round", "auto_round", "moe_wna16", "bitsandbytes"):
        return "int4" if (bits or 4) <= 4 else "int8"
    if q in ("modelopt_fp4", "nvfp4", "mxfp4") or "nvfp4" in name or "fp4" in name:
        return "fp4"
    if q.startswith("fp8") or q in ("modelopt", "fbgemm_fp8", "ptpc_fp8") or "fp8" in name:
        return "fp8"
    if q == "compressed-tensors":
        return "int4" if (bits or 4) <= 4 else "fp8"
    if any(tag in name for tag in ("awq", "gptq", "int4", "4bit", "w4a16", "autoround", "auto-round")):
        return "int4"
    return "bf16"


def _layer_params(model: ModelDims) -> tuple[float, float]:
    """(linear parameters of one attention layer, of one GDN layer), MLP included."""
    h = model.hidden
    mlp = 3 * h * model.intermediate
    if model.experts:
        mlp = model.experts * 3 * h * model.expert_intermediate + 3 * h * model.shared_expert_intermediate \
            + h * model.experts
    gate = 2 if model.hybrid else 1  # Qwen3.5-style attention gates its output: q_proj is twice as wide
    attention = h * model.heads * model.head_dim * gate + 2 * h * model.kv_heads * model.head_dim \
        + model.heads * model.head_dim * h
    linear = 0.0
    if model.linear:
        g = model.linear
        keys, values = g.key_heads * g.key_dim, g.value_heads * g.value_dim
        linear = h * (2 * keys + 2 * values) + h * 2 * g.value_heads + values * h
    return attention + mlp, linear + mlp


def estimate(model: ModelDims, family: str) -> Weights:
    """From the config's dimensions: linear layers at the format's width, embeddings and the LM
    head at the model dtype; the MTP head (one layer, its own norm and projection) in bf16."""
    attention, linear = _layer_params(model)
    linears = model.attention_layers * attention + model.linear_layers * linear
    embed = model.vocab * model.hidden * (1 if model.tied_embeddings else 2)
    main = linears * LINEAR_BYTES.get(family, 2.0) + embed * 2
    # the MTP module: a full layer and a 2h x h projection in bf16 (it shares the embeddings and
    # the LM head with the target model)
    mtp = model.mtp_layers * (attention + 2 * model.hidden * model.hidden) * 2
    return Weights(int(main), int(mtp), f"estimate ({math.fsum([linears, embed]) / 1e9:.1f}B parameters, {family})")


def _header(path: Path) -> dict[str, object]:
    with path.open("rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        if length > 100 * 1024 * 1024:
            raise ValueError("header too large")
        data = json.loads(handle.read(length))
    return data if isinstance(data, dict) else {}


def from_checkpoint(model_dir: Path) -> Weights | None:
    """Bytes from the safetensors headers in model_dir (MTP tensors apart; a vision tower left
    in, as vLLM loads it), else the index's total_size; None when neither is there."""
    files = sorted(model_dir.glob("*.safetensors"))
    main = mtp = 0
    try:
        for path in files:
            for name, info in _header(path).items():
                if name == "__metadata__" or not isinstance(info, dict):
                    continue
                shape = info.get("shape") or []
                count = math.prod(int(x) for x in shape) if shape else 1
                size = count * SAFETENSORS_BYTES.get(str(info.get("dtype")), 2)
                if name.startswith(("mtp.", "model.mtp.")) or ".mtp." in name:
                    mtp += int(size)
                else:
                    main += int(size)
    except (OSError, ValueError, struct.error):
        main = mtp = 0
    if main:
        return Weights(main, mtp, "safetensors headers")
    index = model_dir / "model.safetensors.index.json"
    try:
        total = json.loads(index.read_text()).get("metadata", {}).get("total_size")
    except (OSError, ValueError, AttributeError):
        return None
    return Weights(int(total), 0, "safetensors index") if isinstance(total, int) and total > 0 else None
