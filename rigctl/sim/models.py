"""What the simulator serves: a model's dimensions (rigctl/vllm: the shipped configs, else a dense
model guessed from the parameter count in its name) and how fast one RTX 3090 decodes it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rigctl.vllm.model import ModelDims, guessed_dims, shipped_dims

# Single-stream decode tokens/s on one RTX 3090 (W4A16), from the owners' figures where they exist.
DECODE_TPS = ((re.compile(r"qwen3\.[568]-27b", re.I), 31.0), (re.compile(r"qwen2\.5-3b", re.I), 180.0))


@dataclass(frozen=True)
class ModelSpec:
    dims: ModelDims
    decode_tps_tp1: float  # single-stream decode tokens/s on one RTX 3090

    @property
    def name(self) -> str:
        return self.dims.name

    @property
    def architecture(self) -> str:
        return self.dims.architecture

    @property
    def max_position(self) -> int:
        return self.dims.max_position or 4096

    @property
    def hybrid(self) -> bool:
        return self.dims.hybrid


def lookup(model: str) -> ModelSpec:
    dims = shipped_dims(model) or guessed_dims(model)
    for pattern, tps in DECODE_TPS:
        if pattern.search(model):
            return ModelSpec(dims, tps)
    match = re.search(r"(\d+(?:\.\d+)?)\s*[bB]\b", model.replace("_", "-"))
    params = float(match.group(1)) if match else 8.0
    return ModelSpec(dims, max(8.0, 900.0 / (params * 2.0)))  # memory-bound: bf16 bytes per token
