"""The verdict: the candidate's gate metric against the mean of the controls.

- inconclusive when the controls differ from each other by more than min_change (the rig
  is too noisy to tell, whatever the candidate did), when a control failed requests, when
  a figure the gate needs was not measured, or when a warm cache could have decided it;
- promote when the candidate beats the controls by at least min_change in the gate's
  direction and no guard regresses beyond its limit;
- reject otherwise, naming the reason.

A warm prefix cache never lets a candidate be promoted. A candidate that lost while it
alone ran warm lost with an advantage, so that rejection stands; a warm control makes a
rejection inconclusive.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from rigctl.bench.metrics import METRICS, improvement
from rigctl.bench.plan import Gate

HEAT_SOAK_C = 5.0  # the second control this much hotter than the first: say so


@dataclass(frozen=True)
class ArmOutcome:
    """What the verdict reads of one arm."""

    number: int  # 1-based, in run order
    role: str  # control | candidate
    profile: str
    metrics: dict[str, float | None]
    cold: bool | None  # None: unproven
    requests: int
    failed: int
    first_error: str = ""
    peak_c: float | None = None
    died: str = ""  # its server died while it was measured: how


@dataclass(frozen=True)
class GuardResult:
    metric: str
    control: float | None
    candidate: float | None
    regression: float | None  # relative, positive = worse
    limit: float
    ok: bool | None  # None: not measured


@dataclass(frozen=True)
class Verdict:
    verdict: str  # promote | reject | inconclusive
    reason: str
    control_mean: float | None
    candidate_mean: float | None
    change: float | None  # the candidate's relative improvement in the gate's direction
    control_drift: float | None  # (max - min) / mean of the controls' gate metric
    guards: tuple[GuardResult, ...] = ()
    notes: tuple[str, ...] = field(default=())


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _pct(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value * 100:+.1f}%"


def _values(arms: Sequence[ArmOutcome], metric: str) -> tuple[list[float], list[ArmOutcome]]:
    present = [a.metrics.get(metric) for a in arms]
    missing = [a for a, v in zip(arms, present, strict=True) if v is None]
    return [v for v in present if v is not None], missing


def drift(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = _mean(values)
    spread = max(values) - min(values)
    if mean == 0:
        return 0.0 if spread == 0 else math.inf
    return spread / abs(mean)


def _guard(metric: str, limit: float, controls: Sequence[ArmOutcome], candidates: Sequence[ArmOutcome]) -> GuardResult:
    c, c_missing = _values(controls, metric)
    b, b_missing = _values(candidates, metric)
    if c_missing or b_missing or not c or not b:
        return GuardResult(metric, None, None, None, limit, None)
    control, candidate = _mean(c), _mean(b)
    gain = improvement(METRICS[metric], control, candidate)
    if gain is None:  # a control of 0 (no preemptions): any step the wrong way is a regression
        worse = candidate > 0 if METRICS[metric].better == "lower" else candidate < 0
        regression = math.inf if worse else 0.0
    else:
        regression = -gain
    return GuardResult(metric, control, candidate, regression, limit, regression <= limit)


def decide(gate: Gate, arms: Sequence[ArmOutcome]) -> Verdict:
    controls = [a for a in arms if a.role == "control"]
    candidates = [a for a in arms if a.role == "candidate"]
    metric = METRICS[gate.metric]
    c, c_missing = _values(controls, gate.metric)
    b, b_missing = _values(candidates, gate.metric)
    notes = _notes(controls, arms)
    control_mean = _mean(c) if c else None
    candidate_mean = _mean(b) if b else None
    spread = drift(c)
    guards = tuple(_guard(g.metric, g.max_regression, controls, candidates) for g in gate.guards)

    def verdict(kind: str, reason: str, change: float | None = None) -> Verdict:
        return Verdict(kind, reason, control_mean, candidate_mean, change, spread, guards, tuple(notes))

    if len(controls) < 2 or not candidates:
        return verdict("inconclusive", "a verdict needs two control arms around the candidate; the run stopped short")
    for arm in controls:
        if arm.died:
            return verdict("inconclusive", f"control arm {arm.number} ({arm.profile}): {arm.died}")
    for arm in candidates:
        if arm.died:
            return verdict("reject", f"candidate arm {arm.number} ({arm.profile}): {arm.died}")
    for arm in controls:
        if arm.failed:
            return verdict("inconclusive", f"control arm {arm.number} ({arm.profile}): {arm.failed} of "
                                           f"{arm.requests} requests failed ({arm.first_error})")
    missing = c_missing + b_missing
    if missing:
        arm = missing[0]
        return verdict("inconclusive", f"{gate.metric} was not measured in arm {arm.number} ({arm.profile})")
    assert spread is not None and control_mean is not None and candidate_mean is not None
    if spread > gate.min_change:
        return verdict("inconclusive", f"the controls differ by {_pct(spread).lstrip('+')} on {gate.metric}, more "
                                       f"than the gate's {gate.min_change * 100:.1f}%: this rig is too noisy to tell")
    change = improvement(metric, control_mean, candidate_mean)
    if change is None:
        return verdict("inconclusive", f"the controls' {gate.metric} is 0: a relative change from nothing means "
                                       "nothing")
    for arm in candidates:
        if arm.failed:
            return _warmth(verdict("reject", f"candidate arm {arm.number} ({arm.profile}): {arm.failed} of "
                                             f"{arm.requests} requests failed ({arm.first_error})", change), arms)
    if change < gate.min_change:
        return _warmth(verdict("reject", f"{gate.metric} {_pct(change)} {'better' if change >= 0 else 'worse'} "
                                         f"than the controls, short of the gate's {gate.min_change * 100:.1f}%",
                               change), arms)
    for guard in guards:
        if guard.ok is None:
            return verdict("inconclusive", f"the guard on {guard.metric} could not be checked: it was not "
                                           f"measured in every arm", change)
    for guard in guards:
        if not guard.ok:
            return _warmth(verdict("reject", f"{gate.metric} {_pct(change)}, but the guard on {guard.metric} "
                                             f"failed: {_pct(guard.regression or 0.0).lstrip('+')} worse, limit "
                                             f"{guard.limit * 100:.1f}%", change), arms)
    return _warmth(verdict("promote", f"{gate.metric} {_pct(change)} against the controls (gate "
                                      f"{gate.min_change * 100:.1f}%), controls within "
                                      f"{spread * 100:.1f}%" + (", guards held" if guards else ""), change), arms)


def _state(arm: ArmOutcome) -> str:
    return "ran on a warm prefix cache" if arm.cold is False else "could not be proven cold"


def _warmth(result: Verdict, arms: Sequence[ArmOutcome]) -> Verdict:
    """A warm arm cannot promote; a warm control makes a rejection inconclusive. The arms named are
    the ones that were warm (every one of them), in the role that matters for the verdict."""
    warm = [a for a in arms if a.cold is not True]
    warm_controls = [a for a in warm if a.role == "control"]
    if not warm:
        return result
    if result.verdict == "promote":
        named = "; ".join(f"{a.role} arm {a.number} ({a.profile}) {_state(a)}" for a in warm)
        why = f"it would promote, but {named}: a warm cache cannot promote"
    elif result.verdict == "reject" and warm_controls:
        named = "; ".join(f"control arm {a.number} ({a.profile}) {_state(a)}" for a in warm_controls)
        why = f"it would reject, but {named}: its figures are inflated"
    else:
        return result
    return Verdict("inconclusive", why, result.control_mean, result.candidate_mean, result.change,
                   result.control_drift, result.guards, result.notes)


def _notes(controls: Sequence[ArmOutcome], arms: Sequence[ArmOutcome]) -> list[str]:
    notes = []
    temps = [a.peak_c for a in controls]
    if len(temps) >= 2 and temps[0] is not None and temps[-1] is not None and temps[-1] - temps[0] >= HEAT_SOAK_C:
        notes.append(f"heat soak: the last control ran {temps[-1] - temps[0]:.0f} °C hotter than the first "
                     f"({temps[0]:.0f} -> {temps[-1]:.0f} °C); a drift may be thermal, not the profile")
    for arm in arms:
        if arm.cold is False:
            notes.append(f"arm {arm.number} ({arm.profile}) started on a warm prefix cache")
    return notes
