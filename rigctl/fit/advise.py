"""The layouts a rig allows, each worker's predicted budget and pool, and the DP-vs-TP rule.

The rule owners measured (2x RTX 4090, a 27B at ~17 GB: TP2 served 2.2-3.7x DP2): a model that
fits one GPU but takes at least half of it is split across the GPUs (2 or 4 of them), because
the memory a replica cannot spare buys CUDA graphs, the MTP head and KV; a small model keeps a
replica per GPU. Every figure is judged per worker: one GPU for a replica, the group for a split.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from rigctl.units import GIB
from rigctl.vllm.flags import ServeFlags
from rigctl.vllm.kvpool import Pool, logged_range, pool
from rigctl.vllm.memory import CUDA_CONTEXT, SAFETY, WorkerBudget, model_max_len, plan_worker
from rigctl.vllm.model import ModelDims
from rigctl.vllm.weights import Weights

TIERS = (1, 2, 4)


@dataclass(frozen=True)
class FitInputs:
    """What a fit is asked: the model, its weights, the rig's GPUs and the launch's flags (vLLM's
    names; the layout's own TP and DP are set per layout)."""

    model: ModelDims
    weights: Weights
    gpu_totals: tuple[int, ...]  # bytes, one per GPU of the rig
    flags: ServeFlags = field(default_factory=ServeFlags)
    gpu_name: str = "GPU"
    available_kv_bytes: int | None = None  # a given budget: skips the budget step
    available_is_logged: bool = False  # that budget is a boot log's 2-decimal GiB figure
    correction_gib: float = 0.0

    @property
    def length(self) -> int:
        return model_max_len(self.model, self.flags)

    def layout_flags(self, tp: int, dp: int) -> ServeFlags:
        return replace(self.flags, tensor_parallel_size=tp, data_parallel_size=dp)


@dataclass(frozen=True)
class Layout:
    tp: int
    dp: int
    fits: bool
    why_not: str | None
    max_num_seqs: int
    budget: WorkerBudget | None = None
    pool: Pool | None = None
    pool_range: tuple[int, int] | None = None  # tokens a rounded logged budget allows
    tiers: dict[int, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"TP{self.tp}/DP{self.dp}"

    @property
    def available_gib(self) -> float | None:
        return self.pool.available_bytes / GIB if self.pool else None

    @property
    def slots(self) -> float:
        """Full-length requests the whole layout holds at once (all replicas)."""
        if not self.pool:
            return 0.0
        return self.dp * min(self.pool.max_concurrency, self.max_num_seqs)

    def to_json(self) -> dict[str, Any]:
        p, b = self.pool, self.budget
        out: dict[str, Any] = {
            "tp": self.tp,
            "dp": self.dp,
            "predicted": True,
            "fits": self.fits,
            "why_not": self.why_not,
            "pool_tokens": p.tokens if p else None,
            "max_concurrency": round(p.max_concurrency, 4) if p else None,
            "block_size": p.shape.block_size if p else None,
            "num_blocks": p.num_blocks if p else None,
            "blocks_per_request": p.blocks_per_request if p else None,
            "available_kv_gib": round(self.available_gib, 4) if self.available_gib is not None else None,
            "mamba_blocks": p.mamba_blocks if p else None,
            "max_num_seqs": self.max_num_seqs,
            "state_mib_per_seq": round(p.state_bytes_per_seq / 2**20, 1) if p and p.shape.linear_layers else None,
            "groups": p.shape.groups if p else None,
            "one_request_fits": p.fits_one_request if p else None,
            "state_page_padding": round(p.shape.padding, 4) if p and p.shape.linear_layers else None,
            "pool_tokens_range": list(self.pool_range) if self.pool_range else None,
            "max_model_len_for": {str(k): v for k, v in self.tiers.items()},
        }
        if b:
            out["budget_gib"] = {
                "gpu_total": round(b.total / GIB, 2),
                "requested": round(b.requested / GIB, 2),
                "weights_per_rank": round(b.weights / GIB, 2),
                "mtp_head": round(b.mtp_head / GIB, 2),  # resident: what the pool pays for
                "activation": round(b.activation / GIB, 2),
                "non_torch": round(b.non_torch / GIB, 2),
                "cuda_graphs": round(b.graphs / GIB, 2),
                "correction": round(b.correction, 2),
            }
            out["load_peak_gib"] = load_peak_json(b)
        return out


def load_peak_json(b: WorkerBudget) -> dict[str, float]:
    """The rank's peak while its weights (and MTP draft) load, against the card."""
    return {
        "weights_per_rank": round(b.weights / GIB, 2),
        "mtp_head": round(b.mtp_head / GIB, 2),
        "draft_embedding_and_lm_head": round(b.draft_own / GIB, 2),
        "non_torch": round(b.non_torch / GIB, 2),
        "cuda_context": CUDA_CONTEXT,
        "peak": round(b.load_peak / GIB, 2),
        "gpu_total": round(b.total / GIB, 2),
        "margin": round(b.load_margin() / GIB, 2),
    }


def load_problem(b: WorkerBudget) -> str | None:
    """Why the rank runs out of memory while it loads, or None. Only a draft's own layers make
    the peak above what the budget already holds to the requested fraction."""
    if b.loads_on():
        return None
    draft = f" + {b.draft_own / GIB:.2f} the MTP draft's own embedding and LM head" if b.draft_own else ""
    return (
        f"runs out of memory loading: {b.weights / GIB:.2f} weights + {b.mtp_head / GIB:.2f} MTP head{draft} + "
        f"{b.non_torch / GIB:.2f} non-torch + {CUDA_CONTEXT:.2f} CUDA context = {b.load_peak / GIB:.2f} of the "
        f"{b.total / GIB:.2f} GiB card, {b.load_margin() / GIB:.2f} GiB left (under the {SAFETY:.2f} margin)"
        + ("; vLLM loads the draft whole before it gives it the target's embedding and LM head" if b.draft_own else "")
    )


def candidates(gpus: int) -> list[tuple[int, int]]:
    """TP x DP pairs (powers of two) that the rig's GPUs hold, smallest first."""
    sizes = [s for s in (1, 2, 4, 8) if s <= gpus]
    return [(tp, dp) for tp in sizes for dp in sizes if tp * dp <= gpus]


def _split_problem(model: ModelDims, tp: int) -> str | None:
    if model.heads % tp:
        return f"vLLM splits attention heads across TP ranks: {model.heads} heads are not divisible by {tp}"
    if model.linear and (model.linear.value_heads % tp or model.linear.key_heads % tp):
        return f"the GDN heads ({model.linear.key_heads} key, {model.linear.value_heads} value) are not divisible by {tp}"
    return None


def evaluate(inputs: FitInputs, tp: int, dp: int) -> Layout:
    gpus = len(inputs.gpu_totals)
    total = min(inputs.gpu_totals) if inputs.gpu_totals else 0
    seqs = inputs.flags.seqs(total)
    if tp * dp > gpus and not (gpus == 0 and inputs.available_kv_bytes is not None):  # no rig: the KV step only
        return Layout(tp, dp, False, f"needs {tp * dp} GPUs; this rig has {gpus}", seqs)
    problem = _split_problem(inputs.model, tp)
    if problem:
        return Layout(tp, dp, False, problem, seqs)
    plan = plan_worker(
        inputs.model, inputs.weights, total, inputs.layout_flags(tp, dp), inputs.correction_gib, inputs.available_kv_bytes
    )
    budget, shape, available = plan.budget, plan.shape, plan.available
    if budget is not None:
        if not budget.loads:
            return Layout(
                tp,
                dp,
                False,
                f"the weights take {(budget.weights + budget.mtp_head) / GIB:.1f} GiB per "
                f"GPU, more than the {budget.requested / GIB:.1f} GiB vLLM may use of a "
                f"{total / GIB:.1f} GiB card",
                seqs,
                budget,
            )
        if available <= 0:
            return Layout(
                tp,
                dp,
                False,
                f"no memory is left for KV: the budget is {available / GIB:.2f} GiB per GPU after weights, activations and graphs",
                seqs,
                budget,
            )
    result = plan.pool
    span = None
    if inputs.available_is_logged and inputs.available_kv_bytes is not None:
        low, high = logged_range(inputs.available_kv_bytes / GIB)
        span = (pool(shape, low, inputs.length).tokens, pool(shape, high - 1, inputs.length).tokens)
    tiers = {n: min(result.max_len_for(n), inputs.model.max_position or 10**9) for n in TIERS}
    # the pool it would have: a load that runs out of memory still says what it loaded for
    why_not = load_problem(budget) if budget is not None else None
    if why_not is None and not result.fits_one_request:
        why_not = (
            f"one {inputs.length:,}-token request needs {result.blocks_per_request:,} blocks and the pool has "
            f"{result.num_blocks:,}: vLLM refuses to start (the largest max_model_len that fits is "
            f"{tiers[1]:,})"
        )
    elif why_not is None and result.mamba_blocks is not None and seqs > result.mamba_blocks:
        why_not = (
            f"max_num_seqs ({seqs}) exceeds the {result.mamba_blocks} blocks the GDN state can use: vLLM "
            f"refuses to start (lower max_num_seqs to {result.mamba_blocks} or less)"
        )
    return Layout(tp, dp, why_not is None, why_not, seqs, budget, result, span, tiers)


def layouts(inputs: FitInputs, tp: int | None = None, dp: int | None = None) -> list[Layout]:
    if tp is not None or dp is not None:
        return [evaluate(inputs, tp or 1, dp or 1)]
    return [evaluate(inputs, t, d) for t, d in candidates(len(inputs.gpu_totals))]


@dataclass(frozen=True)
class Recommendation:
    tp: int
    dp: int
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"tp": self.tp, "dp": self.dp, "why": self.why, "predicted": True}


def _figures(layout: Layout) -> str:
    assert layout.pool is not None
    per = "per GPU" if layout.tp > 1 else "per replica"
    limit = (
        f" (at max_num_seqs {layout.pool.mamba_blocks} or less: the GDN state's blocks; {layout.max_num_seqs} was asked)"
        if state_limited(layout)
        else ""
    )
    return (
        f"{layout.name}: {layout.available_gib:.1f} GiB of KV {per}, {layout.pool.tokens:,} tokens"
        f"{' each' if layout.dp > 1 else ''}, {layout.slots:.1f} full-length requests at once{limit}"
    )


def state_limited(layout: Layout) -> bool:
    """The layout would serve but for max_num_seqs: one request fits, and the sequences asked for
    (vLLM's default 256 when none is set) are more than the blocks the GDN state may use."""
    p = layout.pool
    return (
        not layout.fits
        and (layout.budget is None or layout.budget.loads_on())
        and p is not None
        and p.fits_one_request
        and p.mamba_blocks is not None
        and layout.max_num_seqs > p.mamba_blocks
    )


def recommend(inputs: FitInputs, found: list[Layout]) -> Recommendation | None:
    """The rule, with its reason in numbers; None when nothing fits. A layout that fails only on
    max_num_seqs (vLLM's default of 256 is more than a hybrid model's state blocks on a 24 GB card)
    still counts: the rule is about the weights, and the reason says max_num_seqs is the limit."""
    fitting = {(lay.tp, lay.dp): lay for lay in found if lay.fits or state_limited(lay)}
    if not fitting:
        return None
    gpus = len(inputs.gpu_totals)
    total = min(inputs.gpu_totals)
    weights = (inputs.weights.main_bytes + (inputs.weights.mtp_bytes if inputs.flags.mtp_tokens else 0)) / GIB
    share = weights * GIB / total
    single = fitting.get((1, 1))

    def because(pick: Layout, why: str) -> Recommendation:
        return Recommendation(pick.tp, pick.dp, why)

    if gpus == 1:
        if single:
            return because(single, f"one GPU: {_figures(single)} (predicted)")
        return None
    full = 1 << (gpus.bit_length() - 1)  # the largest power of two of GPUs
    split, replicas = fitting.get((full, 1)), fitting.get((1, full))
    takes = f"the weights take {weights:.1f} of {total / GIB:.1f} GiB ({share:.0%} of one GPU)"
    if single is None:
        smallest = min((lay for lay in fitting.values() if lay.dp == 1), key=lambda lay: lay.tp, default=None)
        pick = smallest or max(fitting.values(), key=lambda lay: lay.slots)
        # the replicas the split is weighed against (TP1/DP2 on two GPUs: each has less of its card
        # than a lone TP1/DP1, the DP coordinator's memory), else one GPU alone
        one = next((lay for lay in found if (lay.tp, lay.dp) == (1, full)), None) or next(
            (lay for lay in found if (lay.tp, lay.dp) == (1, 1)), None
        )
        if one is not None and one.budget is not None and one.budget.loads and one.pool is not None:
            holder = "one GPU" if one.dp == 1 else f"a replica ({one.name})"
            return because(
                pick,
                f"{takes}: {holder} holds the weights but not one {inputs.length:,}-token request "
                f"(max_model_len {one.tiers.get(1, 0):,} would fit); {_figures(pick)} (predicted)",
            )
        return because(pick, f"{takes}: it does not fit one GPU; {_figures(pick)} (predicted)")
    if share >= 0.5 and split is not None:
        against = f" against {_figures(replicas)}" if replicas else " (replicas would not fit)"
        return because(
            split,
            f"{takes}: split; {_figures(split)}{against} (predicted; owners measured "
            f"TP2 2.2-3.7x DP2 for a 27B at ~17 GB on 2x24 GB)",
        )
    if replicas is not None:
        against = f" against {_figures(split)}" if split else ""
        return because(replicas, f"{takes}: under half a GPU, keep a replica per GPU; {_figures(replicas)}{against} (predicted)")
    best = max(fitting.values(), key=lambda lay: lay.slots)
    return because(best, f"{takes}: {_figures(best)} (predicted)")
