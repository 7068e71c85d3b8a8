"""A whole `rigctl fit` answer, built once from what was asked, the rig's GPUs and its boot records:
the model and where its config came from, the weights, every layout predicted, the rule's advice,
the last measurement and the per-rig correction. The CLI only prints it (as text or JSON)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rigctl.errors import BadInputError
from rigctl.fit.advise import FitInputs, Layout, Recommendation, evaluate, layouts, recommend
from rigctl.fit.build import inputs_for, weights_for
from rigctl.fit.calibrate import BootRecord, Correction, Measured, correction, last_measured
from rigctl.fit.check import config_source
from rigctl.fit.inputs import model_dir_or_error
from rigctl.gpu.model import RigInfo
from rigctl.units import GIB
from rigctl.vllm.flags import ServeFlags, flags_from_argv
from rigctl.vllm.kvpool import kv_dtype_bytes
from rigctl.vllm.model import ModelDims, load_dims
from rigctl.vllm.weights import Weights


@dataclass(frozen=True)
class FitQuestion:
    flags: ServeFlags  # the profile's command line with the flags given over it
    profile: str | None = None
    config: Path | None = None  # --config: this config.json, whatever the model
    weights_gib: float | None = None
    available_kv_gib: float | None = None  # a boot log's figure: skips the budget step
    tp: int | None = None  # only this layout
    dp: int | None = None


@dataclass(frozen=True)
class FitAnswer:
    question: FitQuestion
    dims: ModelDims
    config_source: str  # which config.json, said in every answer
    rig: RigInfo
    weights: Weights
    inputs: FitInputs
    layouts: list[Layout]
    advice: Recommendation | None
    own: Layout | None  # the profile's own layout (or the one asked for)
    measured: Measured | None
    correction: Correction

    @property
    def notes(self) -> list[str]:
        notes = list(self.dims.notes)
        if self.question.flags.unmodelled_draft:
            notes.append(
                f"speculative method {self.question.flags.unmodelled_draft} is not modelled (only MTP): its "
                "draft model's memory is not counted"
            )
        return notes

    def to_json(self) -> dict[str, object]:
        flags = self.question.flags
        return {
            "predicted": True,
            "profile": self.question.profile,
            "model": {**model_json(self.dims), "config": self.config_source},
            "rig": self.rig.backend,
            "gpus": [{"name": g.name, "memory_total_gib": round((g.memory_total or 0) / GIB, 2)} for g in self.rig.gpus],
            "weights": {
                "gib": round(self.weights.main_bytes / GIB, 2),
                "mtp_gib": round(self.weights.mtp_bytes / GIB, 2),
                "source": self.weights.source,
            },
            "settings": settings_json(self.inputs),
            "layouts": [lay.to_json() for lay in self.layouts],
            "recommended": self.advice.to_json() if self.advice else None,
            "profile_layout": {"tp": flags.tensor_parallel_size, "dp": flags.data_parallel_size} if self.question.profile else None,
            "measured": measured_json(self.measured, self.own),
            "correction": {"gib": round(self.correction.gib, 3), "boots": self.correction.boots},
            "offload": self.offload(),
            "notes": self.notes,
        }

    def offload(self) -> dict[str, object] | None:
        """vLLM 0.33's KV offload: the host RAM it pins and the tokens of attention KV that buys
        (every rank's share together; the GDN states of a hybrid model stay on the GPU)."""
        flags = self.question.flags
        if not flags.kv_offloading_size:
            return None
        per_token = self.dims.attention_layers * self.dims.kv_heads * self.dims.head_dim * 2
        per_token *= kv_dtype_bytes(self.inputs.flags.kv_cache_dtype, self.dims)
        return {
            "gib": flags.kv_offloading_size,
            "host_ram_gib": flags.kv_offloading_size,
            "tokens": int(flags.kv_offloading_size * GIB / per_token) if per_token else 0,
            "backend": flags.kv_offloading_backend or "native",
        }


def _dims(question: FitQuestion) -> tuple[ModelDims, Path | None, str]:
    """(the dimensions, the model dir when it is on disk, what the config is called)."""
    if question.config is not None:
        model_dir: Path | None = question.config.parent if question.config.name == "config.json" else question.config
        return load_dims(question.config, question.flags.model or str(question.config)), model_dir, str(question.config)
    model = question.flags.model
    model_dir, config, source = config_source(model) if model else (None, None, "")
    if config is None:
        model_dir_or_error(model)  # says why, naming the cache it looked in
        raise BadInputError(f"no config.json for {model}")
    return load_dims(config, model or ""), model_dir, source


def answer(question: FitQuestion, rig: RigInfo, records: Sequence[BootRecord]) -> FitAnswer:
    dims, model_dir, source = _dims(question)
    flags = question.flags
    totals = tuple(g.memory_total or 0 for g in rig.gpus)
    predictions: dict[str, tuple[ModelDims, Path | None] | None] = {}
    fix = correction(records, rig.backend, lambda record: record_budget(record, totals, predictions))
    weights = weights_for(dims, flags, model_dir if model_dir and model_dir.is_dir() else None, question.weights_gib)
    inputs = inputs_for(flags, dims, weights, totals, rig.gpus[0].name if rig.gpus else "GPU", fix.gib, question.available_kv_gib)
    only = (question.tp, question.dp) if question.tp or question.dp else (None, None)
    if not rig.gpus:
        only = (flags.tensor_parallel_size, flags.data_parallel_size)  # no GPU: the KV step alone, for the layout asked for
    found = layouts(inputs, *only)
    advice = recommend(inputs, found) if only == (None, None) else None
    measured = last_measured(records, question.profile, rig.backend) if question.profile else None
    own = next((lay for lay in found if (lay.tp, lay.dp) == (flags.tensor_parallel_size, flags.data_parallel_size)), None)
    return FitAnswer(question, dims, source, rig, weights, inputs, found, advice, own, measured, fix)


def record_budget(
    record: BootRecord, totals: tuple[int, ...], cache: dict[str, tuple[ModelDims, Path | None] | None]
) -> float | None:
    """The predicted available KV bytes of a past boot's command line (None: no config for its
    model here). Its config is found by the one rule every fit uses (check.config_source)."""
    flags = flags_from_argv(record.argv)
    if not flags.model or not totals:
        return None
    if flags.model not in cache:
        model_dir, config, _ = config_source(flags.model)
        try:
            cache[flags.model] = (load_dims(config), model_dir) if config else None
        except BadInputError:
            cache[flags.model] = None
    known = cache[flags.model]
    if known is None:
        return None
    dims, model_dir = known
    layout = evaluate(
        inputs_for(flags, dims, weights_for(dims, flags, model_dir), totals), flags.tensor_parallel_size, flags.data_parallel_size
    )
    return layout.budget.available if layout.budget else None


def model_json(dims: ModelDims) -> dict[str, object]:
    return {
        "name": dims.name,
        "architecture": dims.architecture,
        "hybrid": dims.hybrid,
        "layers": dims.layers,
        "attention_layers": dims.attention_layers,
        "linear_layers": dims.linear_layers,
        "kv_heads": dims.kv_heads,
        "head_dim": dims.head_dim,
        "mtp_layers": dims.mtp_layers,
        "max_position": dims.max_position,
    }


def settings_json(inputs: FitInputs) -> dict[str, object]:
    return {
        "max_model_len": inputs.length,
        "max_num_seqs": inputs.flags.max_num_seqs,
        "kv_cache_dtype": inputs.flags.kv_cache_dtype or "auto",
        "num_speculative_tokens": inputs.flags.mtp_tokens,
        "gpu_memory_utilization": inputs.flags.utilization,
        "max_num_batched_tokens": inputs.flags.max_num_batched_tokens,
        "enforce_eager": inputs.flags.enforce_eager,
        "prefix_caching": inputs.flags.prefix_caching,
        "available_kv_gib_given": (round(inputs.available_kv_bytes / GIB, 4) if inputs.available_kv_bytes is not None else None),
    }


def measured_json(measured: Measured | None, own: Layout | None) -> dict[str, object] | None:
    if measured is None:
        return None
    out: dict[str, object] = {
        "when": measured.when,
        "pool_tokens": measured.pool_tokens,
        "available_kv_gib": measured.available_kv_gib,
        "max_concurrency": measured.max_concurrency,
        "pool_error": None,
        "budget_error": None,
    }
    if own is not None and own.pool is not None and measured.pool_tokens:
        out["pool_error"] = round(own.pool.tokens / measured.pool_tokens - 1, 4)
    if own is not None and own.available_gib is not None and measured.available_kv_gib:
        out["budget_error"] = round(own.available_gib / measured.available_kv_gib - 1, 4)
    return out
