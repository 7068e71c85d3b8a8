"""The dimensions of a model that size its weights, KV and recurrent state, read from its
Hugging Face config.json (flat, or under `text_config` as multimodal checkpoints nest it)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigctl.errors import BadInputError

DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2, "fp16": 2, "bf16": 2,
               "fp8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}


@dataclass(frozen=True)
class LinearAttention:
    """A Gated DeltaNet layer's state dimensions (Qwen3.5/3.6/3.8, Qwen3-Next)."""

    key_heads: int  # linear_num_key_heads (n_k)
    value_heads: int  # linear_num_value_heads (n_v)
    key_dim: int  # linear_key_head_dim (d_k)
    value_dim: int  # linear_value_head_dim (d_v)
    conv_kernel: int  # linear_conv_kernel_dim
    ssm_dtype: str  # mamba_ssm_dtype


@dataclass(frozen=True)
class ModelDims:
    name: str
    architecture: str
    layers: int
    attention_layers: int  # full attention: the layers that hold KV
    linear_layers: int  # Gated DeltaNet layers: a fixed state per sequence
    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int
    vocab: int
    max_position: int
    dtype: str
    tied_embeddings: bool
    mtp_layers: int
    linear: LinearAttention | None
    experts: int = 0
    expert_intermediate: int = 0
    shared_expert_intermediate: int = 0
    quantization: str | None = None  # quantization_config.quant_method of the checkpoint
    quant_bits: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def hybrid(self) -> bool:
        return self.linear is not None and self.linear_layers > 0

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES.get(self.dtype, 2)


def _int(cfg: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = cfg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInputError(f"{where}: {key} is {'missing' if value is None else repr(value)}; "
                            f"it must be a whole number")
    return value


def dims_from_config(raw: dict[str, Any], where: str, name: str = "") -> ModelDims:
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
    assert isinstance(text, dict)
    layers = _int(text, "num_hidden_layers", where)
    heads = _int(text, "num_attention_heads", where)
    hidden = _int(text, "hidden_size", where)
    kv_heads = _int(text, "num_key_value_heads", where, heads)
    head_dim = text.get("head_dim") or hidden // heads
    notes: list[str] = []
    types = text.get("layer_types")
    if isinstance(types, list) and types:
        attention = sum(1 for t in types if t in ("full_attention", "attention"))
        linear = sum(1 for t in types if t == "linear_attention")
        other = sorted({str(t) for t in types} - {"full_attention", "attention", "linear_attention"})
        if other:
            attention += len(types) - attention - linear
            notes.append(f"layer types {', '.join(other)} are counted as full attention: the pool is a lower bound")
    elif isinstance(text.get("full_attention_interval"), int) and "linear_num_value_heads" in text:
        interval = text["full_attention_interval"]
        attention = layers // interval
        linear = layers - attention
    else:
        attention, linear = layers, 0
    gdn = None
    if linear:
        gdn = LinearAttention(_int(text, "linear_num_key_heads", where), _int(text, "linear_num_value_heads", where),
                              _int(text, "linear_key_head_dim", where), _int(text, "linear_value_head_dim", where),
                              _int(text, "linear_conv_kernel_dim", where, 4),
                              str(text.get("mamba_ssm_dtype") or "float32"))
    quant = raw.get("quantization_config") or text.get("quantization_config") or {}
    tied = bool(text.get("tie_word_embeddings", raw.get("tie_word_embeddings", False)))
    return ModelDims(
        name=name or str(raw.get("_name_or_path") or text.get("model_type") or "model"),
        architecture=str((raw.get("architectures") or ["?"])[0]), layers=layers, attention_layers=attention,
        linear_layers=linear, heads=heads, kv_heads=kv_heads, head_dim=int(head_dim), hidden=hidden,
        intermediate=int(text.get("intermediate_size") or 0), vocab=_int(text, "vocab_size", where),
        max_position=int(text.get("max_position_embeddings") or raw.get("max_position_embeddings") or 0),
        dtype=str(text.get("torch_dtype") or text.get("dtype") or raw.get("torch_dtype") or "bfloat16"),
        tied_embeddings=tied, mtp_layers=int(text.get("mtp_num_hidden_layers") or text.get("num_nextn_predict_layers")
                                             or 0),
        linear=gdn, experts=int(text.get("num_experts") or text.get("n_routed_experts") or 0),
        expert_intermediate=int(text.get("moe_intermediate_size") or 0),
        shared_expert_intermediate=int(text.get("shared_expert_intermediate_size") or 0),
        quantization=str(quant.get("quant_method")) if isinstance(quant, dict) and quant.get("quant_method") else None,
        quant_bits=quant.get("bits") if isinstance(quant, dict) and isinstance(quant.get("bits"), int) else None,
        notes=tuple(notes))


def load_dims(path: Path, name: str = "") -> ModelDims:
    """config.json (or a model dir holding one) as ModelDims; BadInputError naming the file."""
    config = path / "config.json" if path.is_dir() else path
    try:
        raw = json.loads(config.read_text())
    except FileNotFoundError:
        raise BadInputError(f"{config}: no such model config") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInputError(f"{config}: not a readable config.json ({exc})") from None
    if not isinstance(raw, dict):
        raise BadInputError(f"{config}: not a model config (a JSON object is expected)")
    return dims_from_config(raw, str(config), name)
