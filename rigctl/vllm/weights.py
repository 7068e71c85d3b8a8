"""Weight bytes: read from the checkpoint when it is on disk, else estimated and labelled so.

The safetensors headers (8 bytes of length, then JSON naming every tensor's dtype and shape)
are read without loading a tensor, so the bytes of the language model, of its MTP head and of
a vision tower are known apart: vLLM loads the MTP weights only with speculative decoding.
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from rigctl.errors import BadInputError
from rigctl.files import open_regular, read_input
from rigctl.jsonio import loads_strict
from rigctl.vllm.model import ModelDims

SAFETENSORS_BYTES = {
    "F64": 8,
    "I64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F4": 0.5,
    "F8_E8M0": 1,
}
# Bytes per parameter of the quantised linear layers (scales and zeros included); embeddings and
# the LM head stay at the model dtype in these checkpoints.
LINEAR_BYTES = {"int4": 0.50, "w4a8": 0.62, "fp4": 0.56, "fp8": 1.02, "int8": 1.02, "bf16": 2.0}


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
        mlp = model.experts * 3 * h * model.expert_intermediate + 3 * h * model.shared_expert_intermediate + h * model.experts
    gate = 2 if model.hybrid else 1  # Qwen3.5-style attention gates its output: q_proj is twice as wide
    attention = h * model.heads * model.head_dim * gate + 2 * h * model.kv_heads * model.head_dim + model.heads * model.head_dim * h
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


HEADER_LIMIT = 64 * 1024 * 1024  # the largest real headers (thousands of tensors) are a few MB
MAX_DIM = 2**40  # no tensor dimension is larger; a bigger one is a damaged header


def _header(path: Path) -> dict[str, object]:
    """A safetensors header: 8 bytes of length, then that much JSON. Only a regular file is
    opened (a FIFO named *.safetensors cannot hang the read); ValueError for anything else."""
    try:
        fd, _ = open_regular(path, "safetensors file")
    except BadInputError as exc:
        raise ValueError(str(exc)) from None
    try:
        head = os.pread(fd, 8, 0)
        if len(head) < 8:
            raise ValueError("shorter than a safetensors header")
        (length,) = struct.unpack("<Q", head)
        if length > HEADER_LIMIT:
            raise ValueError("header too large")
        body = os.pread(fd, length, 8)
    finally:
        os.close(fd)
    data = loads_strict(body)
    return data if isinstance(data, dict) else {}


def _tensor_bytes(info: dict[str, object]) -> int:
    """A tensor's bytes from its dtype and shape; ValueError for a shape that is not one."""
    shape = info.get("shape") or []
    if not isinstance(shape, list) or len(shape) > 16:
        raise ValueError("a tensor's shape is not a list of dimensions")
    count = 1
    for dim in shape:
        if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim <= MAX_DIM:
            raise ValueError(f"a tensor dimension is {str(dim)[:20]}")
        count *= dim
    return int(count * SAFETENSORS_BYTES.get(str(info.get("dtype")), 2))


def from_checkpoint(model_dir: Path) -> Weights | None:
    """Bytes from the safetensors headers in model_dir (MTP tensors apart; a vision tower left
    in, as vLLM loads it), else the index's total_size; None when neither is there."""
    files = sorted(model_dir.glob("*.safetensors"))[:10_000]
    main = mtp = 0
    try:
        for path in files:
            for name, info in _header(path).items():
                if name == "__metadata__" or not isinstance(info, dict):
                    continue
                size = _tensor_bytes(info)
                if name.startswith(("mtp.", "model.mtp.")) or ".mtp." in name:
                    mtp += size
                else:
                    main += size
    except (OSError, ValueError, RecursionError, struct.error):
        main = mtp = 0
    if main:
        return Weights(main, mtp, "safetensors headers")
    index = model_dir / "model.safetensors.index.json"
    if not index.exists():
        return None
    try:
        total = loads_strict(read_input(index, HEADER_LIMIT, "safetensors index")).get("metadata", {}).get("total_size")
    except (BadInputError, ValueError, RecursionError, AttributeError):
        return None
    sane = isinstance(total, int) and not isinstance(total, bool) and 0 < total < 2**50
    return Weights(int(total), 0, "safetensors index") if sane else None
