"""Everything about a plan that can be refused before anything is switched: both profiles
load and validate against the vLLM that would run them, their launches could start, the
gate's figures can be measured on this rig, and what the candidate changes (one thing at a
time, or the verdict cannot say which change did it)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from rigctl.bench.plan import BenchPlan, PlanError
from rigctl.errors import RigctlError
from rigctl.profiles.schema import ProfileError
from rigctl.profiles.summary import Change, launch_diff
from rigctl.profiles.vllm_args import LaunchSpec
from rigctl.serve import preflight
from rigctl.serve.context import ServeContext
from rigctl.serve.looked import serving_name
from rigctl.serve.steps import Prepared, prepare

# Where the server listens and what it calls itself change nothing about how it serves.
NOT_A_CHANGE = frozenset({"--port", "--host", "--served-model-name"})
NEEDS_SPEC = frozenset({"spec_acceptance_rate", "spec_acceptance_length"})


@dataclass(frozen=True)
class CheckedPlan:
    plan: BenchPlan
    control: Prepared
    candidates: dict[str, Prepared]  # by profile name, in the plan's order
    changes: dict[str, tuple[Change, ...]]  # what each candidate changes against the control
    warnings: tuple[str, ...]
    before: Prepared | None = None  # what served when the plan was checked: put back at the end

    @property
    def put_back(self) -> Prepared:
        """What serves at the end of the run: what served before it, else the control."""
        return self.before or self.control

    @property
    def candidate(self) -> Prepared:
        return self.candidates[self.plan.candidate]

    def resolved(self, profile: str) -> Prepared:
        return self.control if profile == self.plan.control else self.candidates[profile]


def build_changes(control: LaunchSpec, candidate: LaunchSpec) -> tuple[Change, ...]:
    """What a candidate changes. Another model with its own quantization is one change, the build:
    an AWQ, an AutoRound and an FP8 checkpoint are compared as builds, not as two knobs each."""
    changes = [c for c in launch_diff(control, candidate) if c.what not in NOT_A_CHANGE]
    model = next((c for c in changes if c.what == "model"), None)
    if model is not None:
        quant = next((c for c in changes if c.what == "--quantization"), None)
        changes = [c for c in changes if c not in (model, quant)]
        before = f"{model.before}" + (f" ({quant.before})" if quant and quant.before else "")
        after = f"{model.after}" + (f" ({quant.after})" if quant and quant.after else "")
        changes.insert(0, Change("the build", before, after))
    return tuple(changes)


def _prepared(ctx: ServeContext, plan: BenchPlan, role: str, name: str) -> Prepared:
    try:
        return prepare(ctx, name)
    except ProfileError as exc:
        raise PlanError([f"{plan.path}: {role} {name!r}: {line}" for line in str(exc).splitlines()]) from exc
    except RigctlError as exc:  # e.g. no option table for the vLLM its command runs
        raise PlanError([f"{plan.path}: {role} {name!r}: {exc}"]) from exc


def check_plan(ctx: ServeContext, plan: BenchPlan) -> CheckedPlan:
    control = _prepared(ctx, plan, "control", plan.control)
    candidates = {name: control if name == plan.control else _prepared(ctx, plan, "candidate", name) for name in plan.candidates}
    problems = []
    for role, prepared in (("control", control), *(("candidate", p) for p in candidates.values())):
        refusal = preflight.before_lock(ctx, prepared.spec)
        if refusal:
            problems.append(f"{plan.path}: {role} {prepared.profile.name!r} cannot start here: {refusal.reason}")
    metrics = [plan.gate.metric, *(g.metric for g in plan.gate.guards)]
    if "j_per_token" in metrics and ctx.sampler is None:
        problems.append(
            f"{plan.path}: gate: j_per_token needs the GPUs' energy counters, and this rig has no NVIDIA driver to read them"
        )
    for metric in NEEDS_SPEC & set(metrics):
        without = [p.profile.name for p in (control, *candidates.values()) if not p.profile.vllm.get("speculative_config")]
        if without:
            problems.append(
                f"{plan.path}: gate: {metric} is only measured with speculative decoding, and "
                f"{', '.join(sorted(set(without)))} has no speculative_config"
            )
    if plan.quality is not None:
        program = plan.quality.command[0]
        if ("/" not in program and shutil.which(program) is None) or (
            "/" in program and not (plan.path.parent / program).exists() and not shutil.which(program)
        ):
            problems.append(f"{plan.path}: quality.command: {program} is not found")
    if problems:
        raise PlanError(problems)
    changes = {name: build_changes(control.spec, p.spec) for name, p in candidates.items()}
    warnings = list(plan.warnings)
    for name, changed in changes.items():
        if name != plan.control and not changed:
            warnings.append(f"{name} launches exactly as {plan.control}: an A/A run in effect, never promoted")
        if len(changed) > 1:
            listed = ", ".join(c.what for c in changed[:6]) + (", ..." if len(changed) > 6 else "")
            warnings.append(f"{name} changes {len(changed)} things at once ({listed}): a verdict cannot say which of them did it")
    before: Prepared | None = None
    serving = serving_name(ctx)
    if serving is not None:
        try:
            before = control if serving == plan.control else candidates.get(serving) or prepare(ctx, serving)
        except RigctlError as exc:  # its profile edited into a broken one, or removed, while it serves
            warnings.append(f"{serving} serves now and cannot be read to be put back after the run ({exc}): the control will serve")
    return CheckedPlan(plan, control, candidates, changes, tuple(warnings), before)
