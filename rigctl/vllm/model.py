"""The dimensions of a model that size its weights, KV and recurrent state, read from its
Hugging Face config.json (flat, or under `text_config` as multimodal checkpoints nest it);
rigctl's copies of the shipped profiles' models' configs; a guess from a name for the simulator."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rigctl.errors import BadInputError
from rigctl.files import read_input
from rigctl.jsonio import loads_strict
from rigctl.rule_compounds import Anything, ListOf, Maybe
from rigctl.rules import REQUIRED, Count, Text, take

DTYPE_BYTES = {
    "float32": 4,
    "float": 4,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}


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


CONFIG_LIMIT = 16 * 1024 * 1024  # a config.json is a few KB; the largest with every layer listed, tens of KB


def dims_from_config(raw: dict[str, Any], where: str, name: str = "") -> ModelDims:
    """The dimensions, each checked for its type and for a range anything real has: a zero head
    count, a negative layer count or a string where a count belongs is one line naming the file
    and the field (BadInputError), never a ZeroDivisionError in the arithmetic after."""
    nested = raw.get("text_config")
    text = nested if isinstance(nested, dict) else raw
    section = "text_config" if text is not raw else ""
    layers = whole(text, "num_hidden_layers", where, 1, 1_000, what=section, unit="layers")
    heads = whole(text, "num_attention_heads", where, 1, 4_096, what=section, unit="heads")
    hidden = whole(text, "hidden_size", where, 1, 1_000_000, what=section)
    kv_heads = whole(text, "num_key_value_heads", where, 1, heads, heads, what=section, unit="heads")
    if hidden // heads < 1 and text.get("head_dim") is None:
        raise BadInputError(f"{where}: hidden_size {hidden} is smaller than num_attention_heads {heads}, and no head_dim is given")
    head_dim = whole(text, "head_dim", where, 1, 65_536, hidden // heads, what=section)
    notes: list[str] = []
    types = text.get("layer_types")
    if isinstance(types, list) and types:
        take(text, "layer_types", ListOf(Anything(), "a list of layer types", 1_000), where, what=section)
        attention = sum(1 for t in types if t in ("full_attention", "attention"))
        linear = sum(1 for t in types if t == "linear_attention")
        other = sorted({str(t)[:40] for t in types} - {"full_attention", "attention", "linear_attention"})
        if other:
            attention += len(types) - attention - linear
            notes.append(f"layer types {', '.join(other[:5])} are counted as full attention: the pool is a lower bound")
    elif text.get("full_attention_interval") is not None and "linear_num_value_heads" in text:
        interval = whole(text, "full_attention_interval", where, 1, layers, what=section, unit="layers")
        attention = layers // interval
        linear = layers - attention
    else:
        attention, linear = layers, 0
    gdn = None
    if linear:
        gdn = LinearAttention(
            whole(text, "linear_num_key_heads", where, 1, 4_096, what=section, unit="heads"),
            whole(text, "linear_num_value_heads", where, 1, 4_096, what=section, unit="heads"),
            whole(text, "linear_key_head_dim", where, 1, 65_536, what=section),
            whole(text, "linear_value_head_dim", where, 1, 65_536, what=section),
            whole(text, "linear_conv_kernel_dim", where, 1, 1_024, 4, what=section),
            field_text(text, "mamba_ssm_dtype", where, "float32", limit=40),
        )
    quant: dict[str, Any] = next(
        (q for q in (raw.get("quantization_config"), text.get("quantization_config")) if isinstance(q, dict)), {}
    )
    architectures = raw.get("architectures")
    architecture = str(architectures[0])[:100] if isinstance(architectures, list) and architectures else "?"
    mtp = whole(text, "mtp_num_hidden_layers", where, 0, 64, 0, what=section, unit="layers") or whole(
        text, "num_nextn_predict_layers", where, 0, 64, 0, what=section, unit="layers"
    )
    return ModelDims(
        name=name or field_text(raw, "_name_or_path", where, "") or field_text(text, "model_type", where, "model"),
        architecture=architecture,
        layers=layers,
        attention_layers=attention,
        linear_layers=linear,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        hidden=hidden,
        intermediate=whole(text, "intermediate_size", where, 0, 100_000_000, 0, what=section),
        vocab=whole(text, "vocab_size", where, 1, 100_000_000, what=section, unit="tokens"),
        max_position=whole(
            text,
            "max_position_embeddings",
            where,
            0,
            1_000_000_000,
            whole(raw, "max_position_embeddings", where, 0, 1_000_000_000, 0, unit="tokens"),
            what=section,
            unit="tokens",
        ),
        dtype=field_text(text, "torch_dtype", where)
        or field_text(text, "dtype", where)
        or field_text(raw, "torch_dtype", where)
        or "bfloat16",
        tied_embeddings=bool(text.get("tie_word_embeddings", raw.get("tie_word_embeddings", False))),
        mtp_layers=mtp,
        linear=gdn,
        experts=whole(text, "num_experts", where, 0, 100_000, 0, what=section, unit="experts")
        or whole(text, "n_routed_experts", where, 0, 100_000, 0, what=section, unit="experts"),
        expert_intermediate=whole(text, "moe_intermediate_size", where, 0, 100_000_000, 0, what=section),
        shared_expert_intermediate=whole(text, "shared_expert_intermediate_size", where, 0, 100_000_000, 0, what=section),
        quantization=field_text(quant, "quant_method", where, what="quantization_config") or None,
        quant_bits=take(quant, "bits", Maybe(Count("bits", 1, 64)), where, None, "quantization_config"),
        notes=tuple(notes),
    )


def whole(
    raw: dict[str, Any], key: str, where: str, low: int, high: int, default: Any = REQUIRED, what: str = "", unit: str = ""
) -> int:
    """A count of config.json by the shared rule (rigctl/rules.py Count), its range one anything real has."""
    return int(take(raw, key, Count(unit, low, high), where, default, what))


def field_text(raw: dict[str, Any], key: str, where: str, default: str = "", limit: int = 200, what: str = "") -> str:
    """A string field; a number where a name belongs (a tool's quirk) is taken as its text."""
    value = raw.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)[:limit]
    return str(take(raw, key, Text(limit=limit), where, default, what))


def load_dims(path: Path, name: str = "") -> ModelDims:
    """config.json (or a model dir holding one) as ModelDims; BadInputError naming the file (a FIFO,
    a device or a huge file is refused without being read to its end)."""
    config = path / "config.json" if path.is_dir() else path
    data = read_input(config, CONFIG_LIMIT, "model config")
    try:
        raw = loads_strict(data)
    except (ValueError, RecursionError) as exc:
        raise BadInputError(f"{config}: not a readable config.json ({str(exc)[:120]})") from None
    if not isinstance(raw, dict):
        raise BadInputError(f"{config}: not a model config (a JSON object is expected)")
    return dims_from_config(raw, str(config), name)


# Dimensions of the models the shipped profiles serve (their Hugging Face config.json), so `rigctl
# fit` answers before a download; a model on disk always wins. Quantised and AutoRound variants
# share their base's dimensions.
SHIPPED_CONFIGS = (
    (re.compile(r"qwen3\.[568]-27b", re.I), "qwen3.6-27b"),
    (re.compile(r"qwen3\.6-35b-a3b", re.I), "qwen3.6-35b-a3b"),
    (re.compile(r"llama-3\.1-8b", re.I), "llama-3.1-8b"),
    (re.compile(r"qwen2\.5-3b", re.I), "qwen2.5-3b"),
)


def shipped_config(model: str) -> Path | None:
    """rigctl's own copy of a known model's config.json, by the model id's name."""
    for pattern, name in SHIPPED_CONFIGS:
        if pattern.search(model):
            return Path(str(resources.files("rigctl.vllm") / "configs" / f"{name}.json"))
    return None


@functools.lru_cache(maxsize=16)
def shipped_dims(model: str) -> ModelDims | None:
    """The dimensions of a model the shipped profiles serve, from rigctl's copy of its config."""
    config = shipped_config(model)
    return load_dims(config, model.rsplit("/", 1)[-1]) if config is not None else None


def guessed_dims(model: str) -> ModelDims:
    """A dense GQA model sized from the parameter count in its name ("Llama-3.1-8B"; 8B when the
    name has none): what the simulator serves for a model it has no config of. Never used by
    `fit`, which asks for the config instead of guessing."""
    match = re.search(r"(\d+(?:\.\d+)?)\s*[bB]\b", model.replace("_", "-"))
    params = float(match.group(1)) if match else 8.0
    layers = max(16, round(32 * (params / 8.0) ** 0.35))
    hidden = max(1024, round(4096 * (params / 8.0) ** 0.4 / 1024) * 1024)  # heads divisible by 8
    heads = hidden // 128
    # the MLP width that makes the layers hold the named parameter count (embeddings apart)
    per_layer = params * 1e9 / layers - 4 * hidden * hidden
    intermediate = max(hidden, int(per_layer / (3 * hidden)))
    return ModelDims(
        name=model.rsplit("/", 1)[-1],
        architecture="LlamaForCausalLM",
        layers=layers,
        attention_layers=layers,
        linear_layers=0,
        heads=heads,
        kv_heads=min(8, heads),
        head_dim=128,
        hidden=hidden,
        intermediate=intermediate,
        vocab=128_256,
        max_position=131_072,
        dtype="bfloat16",
        tied_embeddings=False,
        mtp_layers=0,
        linear=None,
        notes=("guessed from the name: no config.json",),
    )
