"""What the simulator knows about models: enough architecture to size weights, KV and state.

Known models are described from their configs; anything else is guessed from the
parameter count in its name (e.g. "Llama-3.1-8B") as a dense GQA model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GB = 1e9


@dataclass(frozen=True)
class ModelSpec:
    name: str
    architecture: str
    params_b: float  # billions
    layers: int
    full_attention_layers: int  # layers that hold KV (all, for a dense model)
    kv_heads: int
    head_dim: int
    hidden: int
    vocab: int
    max_position: int
    weight_bytes: dict[str, float]  # quantisation family -> total bytes of weights
    gdn_state_bytes: float = 0.0  # recurrent state per sequence at TP=1 (hybrid models)
    mtp_head_bytes: float = 0.0  # the MTP module, kept in bf16
    decode_tps_tp1: float = 30.0  # single-stream decode tokens/s on one RTX 3090

    @property
    def hybrid(self) -> bool:
        return self.gdn_state_bytes > 0


QWEN36_27B = ModelSpec(
    name="Qwen3.6-27B", architecture="Qwen3_5ForConditionalGeneration", params_b=27.0, layers=64,
    full_attention_layers=16, kv_heads=4, head_dim=256, hidden=5120, vocab=248_320, max_position=262_144,
    # int4 (AWQ/GPTQ) ~17 GB as owners report; AutoRound W4A8 keeps more in 8 bit; FP8 adds bf16 embeddings.
    weight_bytes={"int4": 17.0 * GB, "w4a8": 19.5 * GB, "fp8": 30.0 * GB, "bf16": 55.6 * GB},
    gdn_state_bytes=78e6, mtp_head_bytes=4.0 * GB, decode_tps_tp1=31.0,
)

QWEN25_3B = ModelSpec(
    name="Qwen2.5-3B-Instruct", architecture="Qwen2ForCausalLM", params_b=3.1, layers=36, full_attention_layers=36,
    kv_heads=2, head_dim=128, hidden=2048, vocab=151_936, max_position=32_768,
    weight_bytes={"int4": 2.2 * GB, "w4a8": 2.6 * GB, "fp8": 3.4 * GB, "bf16": 6.2 * GB}, decode_tps_tp1=180.0,
)

_KNOWN = ((re.compile(r"qwen3\.6-27b", re.I), QWEN36_27B), (re.compile(r"qwen2\.5-3b", re.I), QWEN25_3B))


def quant_family(quantization: str | None, model: str) -> str:
    """Weight format from the quantization flag when given, else from the checkpoint's name."""
    q = (quantization or "").lower()
    if q == "inc":
        return "w4a8"
    if q in ("awq", "awq_marlin", "auto_awq", "gptq", "gptq_marlin", "auto_gptq", "compressed-tensors", "moe_wna16"):
        return "int4"
    if q.startswith("fp8") or q in ("modelopt", "fbgemm_fp8"):
        return "fp8"
    name = model.lower()
    if "autoround" in name or "auto-round" in name:
        return "w4a8" if "w4a8" in name else "int4"
    if re.search(r"awq|gptq|int4|4bit|w4a16", name):
        return "int4"
    if "fp8" in name:
        return "fp8"
    return "bf16"


def lookup(model: str) -> ModelSpec:
    for pattern, spec in _KNOWN:
        if pattern.search(model):
            return spec
    match = re.search(r"(\d+(?:\.\d+)?)\s*[bB]\b", model.replace("_", "-"))
    params = float(match.group(1)) if match else 8.0
    layers = max(16, round(32 * (params / 8.0) ** 0.35))
    hidden = max(1024, round(4096 * (params / 8.0) ** 0.4 / 128) * 128)
    return ModelSpec(
        name=model.rsplit("/", 1)[-1], architecture="LlamaForCausalLM", params_b=params, layers=layers,
        full_attention_layers=layers, kv_heads=8, head_dim=128, hidden=hidden, vocab=128_256, max_position=131_072,
        weight_bytes={"int4": params * 0.58 * GB, "w4a8": params * 0.65 * GB, "fp8": params * 1.05 * GB,
                      "bf16": params * 2.0 * GB},
        decode_tps_tp1=max(8.0, 900.0 / (params * 2.0)),
    )
