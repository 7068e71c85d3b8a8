"""Everything about a plan that can be refused before anything is switched: both profiles
load and validate against the vLLM that would run them, their launches could start, the
gate's figures can be measured on this rig, and what the candidate changes (one thing at a
time, or the verdict cannot say which change did it)."""

from __future__ import annotations

from dataclasses import dataclass

from rigctl.bench.plan import BenchPlan, PlanError
from rigctl.errors import RigctlError
from rigctl.profiles.schema import ProfileError
from rigctl.profiles.summary import Change, launch_diff
from rigctl.serve import preflight
from rigctl.serve.steps import Prepared, ServeContext, prepare

# Where the server listens and what it calls itself change nothing about how it serves.
NOT_A_CHANGE = frozenset({"--port", "--host", "--served-model-name"})
NEEDS_SPEC = frozenset({"spec_acceptance_rate", "spec_acceptance_length"})


@dataclass(frozen=True)
class CheckedPlan:
    plan: BenchPlan
    control: Prepared
    candidate: Prepared
    changes: tuple[Change, ...]
    warnings: tuple[str, ...]


def _prepared(ctx: ServeContext, plan: BenchPlan, role: str, name: str) -> Prepared:
    try:
        return prepare(ctx, name)
    except ProfileError as exc:
        raise PlanError([f"{plan.path}: {role} {name!r}: {line}" for line in str(exc).splitlines()]) from exc
    except RigctlError as exc:  # e.g. no option table for the vLLM its command runs
        raise PlanError([f"{plan.path}: {role} {name!r}: {exc}"]) from exc


def check_plan(ctx: ServeContext, plan: BenchPlan) -> CheckedPlan:
    control = _prepared(ctx, plan, "control", plan.control)
    candidate = control if plan.candidate == plan.control else _prepared(ctx, plan, "candidate", plan.candidate)
    problems = []
    for role, prepared in (("control", control), ("candidate", candidate)):
        refusal = preflight.before_lock(ctx, prepared.spec)
        if refusal:
            problems.append(f"{plan.path}: {role} {prepared.profile.name!r} cannot start here: {refusal.reason}")
    metrics = [plan.gate.metric, *(g.metric for g in plan.gate.guards)]
    if "j_per_token" in metrics and ctx.sampler is None:
        problems.append(f"{plan.path}: gate: j_per_token needs the GPUs' energy counters, and this rig has no "
                        f"NVIDIA driver to read them")
    for metric in NEEDS_SPEC & set(metrics):
        without = [p.profile.name for p in (control, candidate) if not p.profile.vllm.get("speculative_config")]
        if without:
            problems.append(f"{plan.path}: gate: {metric} is only measured with speculative decoding, and "
                            f"{', '.join(sorted(set(without)))} has no speculative_config")
    if problems:
        raise PlanError(problems)
    changes = tuple(c for c in launch_diff(control.spec, candidate.spec) if c.what not in NOT_A_CHANGE)
    warnings = list(plan.warnings)
    if plan.control != plan.candidate and not changes:
        warnings.append(f"{plan.candidate} launches exactly as {plan.control}: an A/A run in effect")
    if len(changes) > 1:
        listed = ", ".join(c.what for c in changes[:6]) + (", ..." if len(changes) > 6 else "")
        warnings.append(f"the candidate changes {len(changes)} things at once ({listed}): a verdict cannot say "
                        f"which of them did it")
    return CheckedPlan(plan, control, candidate, changes, tuple(warnings))
