"""The simulator's speed of a build (the weights' quantization), of MTP and of async scheduling,
calibrated to what owners measured, so the simulated rig teaches the lessons the real one does.

Source: ../shared/reference/owners/MEASURED.md, "2x RTX 3090: testing method and results"
(131,072 context, fp8 KV, one 120k-token prompt; the owners' own figures):

    build             TTFT 120k prompt   decode, one stream
    AWQ W4A16         81.56 s            60.90 tok/s       the baseline: 1.0, 1.0
    AutoRound W4A8    58.64 s            58.56 tok/s       prefill x1.39, decode x0.96
    FP8               80.20 s            43.24 tok/s       prefill x1.02, decode x0.71

    MTP, depth 1, 70.8% acceptance, max_num_seqs 1: decode 67.64 -> 51.53 tok/s (x0.76): a step
    that drafts k tokens costs 1 + 1.25 k plain steps, so (1 + 0.708) / 2.25 = 0.76; at depth 4
    and 43.7% acceptance it is slower still, as they found ("slower both times").
    Async scheduling at 6 concurrent short requests: 166.8 -> 210.1 tok/s (+26%), no difference
    with long prompts: the gain is the CPU scheduling the GPU waited on between short decode steps,
    so it grows with the batch up to +26% at 6 and is nil while a prefill fills the step.

Only 3090s were measured; the same factors are used for every card, rather than a guess.
"""

from __future__ import annotations

BUILDS: dict[str, tuple[float, float]] = {  # build -> (prefill, decode) against AWQ W4A16
    "awq": (1.0, 1.0),
    "w4a8": (81.56 / 58.64, 58.56 / 60.90),
    "fp8": (81.56 / 80.20, 43.24 / 60.90),
}
MTP_STEP_COST = 1.25  # per drafted token, in plain decode steps
ASYNC_GAIN_MAX = 210.1 / 166.8 - 1  # +26%, reached at 6 running sequences
ASYNC_FULL_AT = 6


def build_of(quantization: str | None, model: str) -> str | None:
    """Which measured build a launch is (None: one no owner measured: AWQ's speed, said so)."""
    name = model.lower()
    quant = (quantization or "").lower()
    if "w4a8" in name or "autoround" in name or "auto-round" in name or quant in ("auto-round", "autoround"):
        return "w4a8"
    if quant.startswith("fp8") or "fp8" in name:
        return "fp8"
    if quant.startswith("awq") or "awq" in name:
        return "awq"
    return None


def build_factors(quantization: str | None, model: str) -> tuple[float, float]:
    """(prefill, decode) speed of this build against AWQ W4A16."""
    return BUILDS.get(build_of(quantization, model) or "awq", (1.0, 1.0))


def mtp_step_cost(spec_tokens: int) -> float:
    """How many plain decode steps one step drafting spec_tokens costs."""
    return 1 + MTP_STEP_COST * spec_tokens


def async_gain(batch: int, prefilling: bool) -> float:
    """Async scheduling's speed-up of a decode step."""
    if prefilling or batch <= 1:
        return 1.0
    return 1 + ASYNC_GAIN_MAX * min(1.0, (batch - 1) / (ASYNC_FULL_AT - 1))
