"""What `profile validate` and the switch preflight ask of the advisor: will vLLM refuse this
profile on this rig (one request does not fit, max_num_seqs above the GDN state's blocks), and
would the rule split a DP layout. Only where the model's config.json is on this machine.

A predicted budget is wrong by up to ~15% (tests/fit/test_budget.py), so a predicted refusal
is an error only when it holds with 15% more budget, a warning otherwise; a KV size set in the
profile is exact, and so is the refusal."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from rigctl.errors import BadInputError
from rigctl.fit.advise import FitInputs, Layout, evaluate, layouts, recommend
from rigctl.fit.build import inputs_for, weights_for
from rigctl.fit.inputs import find_model_dir, local_model_problem
from rigctl.gpu.model import RigInfo
from rigctl.profiles.schema import Diagnostic, Profile
from rigctl.profiles.settings import ResolvedSettings
from rigctl.profiles.validate import validated
from rigctl.profiles.vllm_args import LaunchSpec, launch
from rigctl.severity import Severity
from rigctl.units import GIB
from rigctl.vllm.flags import ServeFlags, flags_from_argv
from rigctl.vllm.memory import CUDA_CONTEXT, SAFETY
from rigctl.vllm.model import load_dims, shipped_config
from rigctl.vllm.options import OptionTable

MARGIN = 0.15


@dataclass(frozen=True)
class FitFinding:
    severity: Severity
    key: str  # the [vllm] key to point at
    message: str


def _key(layout: Layout) -> str:
    return "max_num_seqs" if layout.why_not and "max_num_seqs" in layout.why_not else "max_model_len"


def config_source(model: str) -> tuple[Path | None, Path | None, str]:
    """(the model dir on this machine, the config.json to read, what to call it): the model's own
    config where it is on disk, else rigctl's copy of a known model's, else none. One rule for
    validate, the switch's preflight, the Profiles screen and the dry run."""
    model_dir = find_model_dir(model)
    if model_dir is not None:
        return model_dir, model_dir / "config.json", str(model_dir / "config.json")
    shipped = shipped_config(model)
    if shipped is not None:
        return None, shipped, f"rigctl's copy of its config.json ({model} is not on this machine)"
    return None, None, f"no config.json for {model} here"


def _inputs(flags: ServeFlags, gpu_totals: tuple[int, ...]) -> tuple[FitInputs, str] | str:
    """The advisor's inputs for this command line and which config they came from, or why there
    are none."""
    if not flags.model:
        return "no model"
    model_dir, config, source = config_source(flags.model)
    if config is None:
        return source
    dims = load_dims(config)  # BadInputError: the model's own config on this machine is broken
    return inputs_for(flags, dims, weights_for(dims, flags, model_dir), gpu_totals), source


def model_max_len(model: str | None) -> int | None:
    """The model's max_position_embeddings from its config.json on this machine, else from rigctl's
    copy of a known model's; None when neither says."""
    config = config_source(model)[1] if model else None
    if config is None:
        return None
    try:
        return load_dims(config).max_position or None
    except BadInputError:
        return None


def predicted_layout(flags: ServeFlags, gpu_totals: tuple[int, ...]) -> Layout | str:
    """The profile's own layout on this rig, predicted; or why it cannot be."""
    try:
        found = _inputs(flags, gpu_totals)
    except BadInputError as exc:
        return str(exc)
    if isinstance(found, str):
        return found
    inputs = found[0]
    if not gpu_totals and inputs.available_kv_bytes is None:
        return "no GPU known"
    return evaluate(inputs, flags.tensor_parallel_size, flags.data_parallel_size)


def predicted_pool(flags: ServeFlags, gpu_totals: tuple[int, ...]) -> tuple[int | None, str]:
    """(the pool one replica of this command line would get, predicted; what it was predicted from,
    or why there is no prediction)."""
    try:
        found = _inputs(flags, gpu_totals)
    except BadInputError as exc:
        return None, str(exc)
    if isinstance(found, str):
        return None, found
    inputs, source = found
    if not gpu_totals and inputs.available_kv_bytes is None:
        return None, "no GPU known"
    layout = evaluate(inputs, flags.tensor_parallel_size, flags.data_parallel_size)
    if layout.pool is None:
        return None, layout.why_not or "no pool"
    return layout.pool.tokens, f"predicted from {source}"


def check(flags: ServeFlags, gpu_totals: tuple[int, ...]) -> list[FitFinding]:
    if not flags.model or not gpu_totals or flags.tensor_parallel_size * flags.data_parallel_size > len(gpu_totals):
        return []  # (the GPU count check names a layout the rig cannot hold)
    try:
        found = _inputs(flags, gpu_totals)
    except BadInputError as exc:  # vLLM reads the same file at boot: it would fail on it too
        return [FitFinding("error", "model", f"the model's config is not usable: {exc}")]
    if isinstance(found, str):
        return []
    inputs, source = found
    findings: list[FitFinding] = []
    ceiling = inputs.model.max_position
    if flags.max_model_len and ceiling and flags.max_model_len > ceiling and not flags.allow_long_max_model_len:
        return [
            FitFinding(
                "error",
                "max_model_len",
                f"{flags.max_model_len:,} is more than the model allows "
                f"(max_position_embeddings {ceiling:,} in {source}): vLLM refuses it at start "
                f"(VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 in [env] overrides it, at the risk of wrong output)",
            )
        ]
    layout = evaluate(inputs, flags.tensor_parallel_size, flags.data_parallel_size)
    draft = layout.budget.draft_own if layout.budget is not None else 0.0
    if not layout.fits and layout.budget is not None and draft and not layout.budget.loads_on():
        # the MTP draft's peak at load: an error only when it is over the card without the
        # estimated CUDA context and margin; within them it may load
        over = layout.budget.load_margin() + (CUDA_CONTEXT + SAFETY) * GIB < 0
        findings.append(
            FitFinding(
                "error" if over else "warning",
                "speculative_config",
                f"{layout.why_not} (predicted from {source}"
                + ("" if over else ", within the estimate of the CUDA context: it may load")
                + "; rigctl fit shows the figures)",
            )
        )
    elif not layout.fits and layout.pool is not None:
        exact = inputs.available_kv_bytes is not None
        generous = _with_more_budget(inputs, layout)
        if exact or (generous is not None and not generous.fits):
            findings.append(
                FitFinding(
                    "error",
                    _key(layout),
                    f"{layout.why_not} ({'exact' if exact else 'predicted'} from {source}; rigctl fit shows the figures)",
                )
            )
        else:
            findings.append(
                FitFinding(
                    "warning",
                    _key(layout),
                    f"{layout.why_not} (predicted from {source}, within "
                    "the advisor's margin: it may start; rigctl fit shows the figures)",
                )
            )
    if flags.data_parallel_size > 1 and flags.tensor_parallel_size == 1:
        advice = recommend(inputs, layouts(inputs))
        if advice is not None and advice.tp > 1:
            findings.append(FitFinding("warning", "data_parallel_size", f"the fit rule would split this model: {advice.why}"))
    return findings


def _with_more_budget(inputs: FitInputs, layout: Layout) -> Layout | None:
    if layout.budget is None:
        return None
    more = MARGIN * layout.budget.available / GIB
    return evaluate(replace(inputs, correction_gib=inputs.correction_gib + more), layout.tp, layout.dp)


def profile_diagnostics(profile: Profile, flags: ServeFlags, gpu_totals: tuple[int, ...]) -> list[Diagnostic]:
    """The findings as the profile's diagnostics, pointing at the key where it was written."""
    vllm_keys = {k.replace("-", "_"): k for k in profile.vllm}
    out = []
    for finding in check(flags, gpu_totals):
        key = vllm_keys.get(finding.key, finding.key)
        out.append(profile.diagnostic(finding.severity, f"vllm.{key}", finding.message))
    return out


@dataclass(frozen=True)
class CheckedProfile:
    """A profile as rigctl checked it, once: the settings resolved against the flags of the vLLM
    its command runs, every diagnostic (validation, lints, the fit), the launch rendered from those
    settings when no error stands, the flags that size its memory and the fit's prediction for
    its own layout. Built by `check_profile` and passed on: the switch and its preflight, the dry
    run, the bench and the Profiles screen read it, none checks again."""

    profile: Profile
    table: OptionTable  # the vLLM version it was checked against
    settings: ResolvedSettings
    diagnostics: tuple[Diagnostic, ...]  # errors first, then warnings
    launch: LaunchSpec | None  # None while an error stands
    flags: ServeFlags | None = None  # the memory-sizing flags of the launch
    prediction: Layout | str | None = None  # its own layout on the rig, predicted; or why not

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


def check_profile(
    profile: Profile, table: OptionTable, rig: RigInfo | None, vllm_command: tuple[str, ...], host_paths: bool = True
) -> CheckedProfile:
    """A profile as every caller checks it (validate, the switch's preflight, the Profiles
    screen): validated against the flags and the rig, rendered when it has no error, then
    asked whether vLLM would refuse it for memory on this rig. (diagnostics, the launch or None).
    `host_paths`: vLLM runs on this machine (not in a container), so a model written as a path
    must be here."""
    settings, diagnostics = validated(profile, table, rig)
    missing = local_model_problem(profile.model) if host_paths and profile.model else None
    if missing:
        diagnostics.insert(0, profile.diagnostic("error", "model", f"{missing} (vLLM would fail at boot)"))
    if any(d.severity == "error" for d in diagnostics):
        return CheckedProfile(profile, table, settings, tuple(diagnostics), None)
    spec = launch(profile, settings, vllm_command)
    # the launch's own command line, read by the same rule as every boot record's (options_from_launch)
    flags = flags_from_argv(spec.argv, spec.env)
    totals = tuple(g.memory_total or 0 for g in rig.gpus) if rig is not None else ()
    if rig is not None:
        diagnostics += profile_diagnostics(profile, flags, totals)
    return CheckedProfile(profile, table, settings, tuple(diagnostics), spec, flags, predicted_layout(flags, totals))
