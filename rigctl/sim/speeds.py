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

Per card (rigctl/sim/speeds.py's CARDS), from each owner's own table:

    RTX 3090 (the 3090 owner's rig, above): decode 31 tok/s a stream on one card with CUDA graphs
    (60.9 on two, NVLink); a drafted token costs 1.25 plain steps (the MTP loss they measured);
    each extra sequence 5% of a stream's speed.
    RTX 4090 (MEASURED.md "DP2 vs TP2", 2x4090 on PCIe, 256-token answers):
      DP2, one eager replica a card: 30 tok/s at 1 concurrent, 27 a request at 8 (4 a replica),
        14 at 32 (16 a replica). Eager (no CUDA graphs: the Python scheduler launches every
        kernel of every step) runs at 0.75 of the card's graph speed (30 of 40), and the launch
        cost grows with the batch: a stream's speed / (1 + 0.0257 (b-1)^1.40), fitted to 27 and 14.
      TP2 with graphs and MTP (3 drafted tokens): 113 a request at 1 concurrent, 57 at 8, 25 at 32.
        40 tok/s on one card with graphs x 1.45 over PCIe = 58 without MTP; the drafts' expected
        2.52 tokens a step give 113 if a drafted token costs 0.097 of a step on Ada (graphs, the
        MTP head on idle tensor cores), where the 3090 pays 1.25; a stream's speed / (1 +
        0.1875 (b-1)^0.855) fitted to 57 and 25.
    Prefill: a 4090 at ADA_PREFILL times a 3090 (the two owners' long-prompt prefill on TP2).
    Prefill over tensor parallel: PREFILL_TP_SHARE of decode's split gain (the 3090 owner's
    one-vs-two table, above the constant).
    Other cards take the nearest measured generation's factors (Ampere: the 3090's; Ada and
    later: the 4090's), scaled by memory bandwidth; said in docs/guide/bench.md's simulator section.
"""

from __future__ import annotations

from dataclasses import dataclass

BUILDS: dict[str, tuple[float, float]] = {  # build -> (prefill, decode) against AWQ W4A16
    "awq": (1.0, 1.0),
    "w4a8": (81.56 / 58.64, 58.56 / 60.90),
    "fp8": (81.56 / 80.20, 43.24 / 60.90),
}
MTP_STEP_COST = 1.25  # per drafted token, in plain decode steps
# Tensor parallel speeds prefill up less than decode: a prefill chunk's activations (every token's
# hidden state, twice a layer) cross the link, where a decode step sends one token's. The 3090
# owner's one-vs-two table (TP2 over NVLink against one card, their agent workloads): prefill mean
# 4.242 -> 3.012 s, x1.41, where the simulator's decode split gains x1.8 over NVLink. Other links
# were not measured against one card: the same share of their decode gain.
PREFILL_TP_SHARE = (4.242 / 3.012) / 1.8
# A 4090 prefills faster than a 3090 (prefill is bound by compute, where Ada has the more): the two
# owners' long prompts on TP2, the 4090 pair over PCIe 1,760 tok/s (21,759 tokens in 12.4 s at a
# 131k context), the 3090 pair over NVLink 1,471 (AWQ, 120k in 81.56 s): x1.20 for the pair, and
# x1.50 a card once each pair's link is taken out (PCIe without P2P splits prefill x1.13 in this
# simulator, NVLink x1.41)
ADA_PREFILL = (1760 / (120_000 / 81.56)) * ((4.242 / 3.012) / (1.45 * PREFILL_TP_SHARE))
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


def async_gain(batch: int, prefilling: bool) -> float:
    """Async scheduling's speed-up of a decode step."""
    if prefilling or batch <= 1:
        return 1.0
    return 1 + ASYNC_GAIN_MAX * min(1.0, (batch - 1) / (ASYNC_FULL_AT - 1))


@dataclass(frozen=True)
class Card:
    """How a card generation runs a decode step, fitted to the owners' tables (the docstring)."""

    graphs_factor: float  # single-stream decode with CUDA graphs, against one RTX 3090
    mtp_step_cost: float  # per drafted token, in plain decode steps
    mtp_batch_cost: float  # per drafted token and extra running sequence
    batch_slowdown: float  # a stream's slowdown: 1 + batch_slowdown x (b - 1) ** batch_power
    batch_power: float
    prefill_factor: float = 1.0  # prefill (compute-bound) against one RTX 3090
    eager_factor: float = 0.75  # no CUDA graphs: the 4090 owner's eager replica, 30 of the card's 40
    eager_slowdown: float = 0.0257
    eager_power: float = 1.40


CARDS = {
    "ampere": Card(graphs_factor=1.0, mtp_step_cost=MTP_STEP_COST, mtp_batch_cost=0.04, batch_slowdown=0.05, batch_power=1.0),
    "ada": Card(
        graphs_factor=40.0 / 31.0,
        mtp_step_cost=0.097,
        mtp_batch_cost=0.0,
        batch_slowdown=0.1875,
        batch_power=0.855,
        prefill_factor=ADA_PREFILL,
    ),
}
BANDWIDTH_GBS = {"5090": 1792.0, "4090": 1008.0, "3090 Ti": 1008.0, "3090": 936.0, "A6000": 768.0}


def card_of(name: str) -> tuple[Card, float]:
    """(the generation's factors, a bandwidth scale against the card they were measured on)."""
    bandwidth = next((bw for key, bw in BANDWIDTH_GBS.items() if key in name), 900.0)
    if any(key in name for key in ("4090", "4080", "5090", "5080", "L40", "6000 Ada")):
        return CARDS["ada"], bandwidth / BANDWIDTH_GBS["4090"]
    return CARDS["ampere"], bandwidth / BANDWIDTH_GBS["3090"]


def prefill_tp_speedup(decode_speedup: float) -> float:
    """A tensor-parallel group's prefill gain over one card, from its decode gain (PREFILL_TP_SHARE)."""
    return 1.0 if decode_speedup <= 1.0 else max(1.0, decode_speedup * PREFILL_TP_SHARE)
