"""The verdict on one candidate: its gate metric against the mean of the controls around it, with
every reason named and the evidence weighed.

- inconclusive when the controls (all of them) differ by more than min_change, a control failed
  or died, a figure the gate needs was not measured, a warm control inflated the figures, or the
  candidate's own runs (ABABA) disagree by more than min_change;
- reject when the candidate's server died, its requests or quality command failed, its change is
  short of the gate, or a guard regressed past its limit (every one of them named);
- promote otherwise, unless something says the gain cannot be trusted: an arm resting on fewer
  than min_requests requests, a bootstrap interval of the gate metric wider (±) than min_change
  (unless the change clears the gate by more than the interval), a
  change within the rig's measured boot-to-boot noise (`rigctl bench calibrate`), a warm cache,
  or an A/A run (the candidate changes nothing). Then it is inconclusive, saying which.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from rigctl.bench.evidence import relative_width
from rigctl.bench.metrics import METRICS, improvement
from rigctl.bench.plan import Gate, Role

VerdictKind = Literal["promote", "reject", "inconclusive"]

HEAT_SOAK_C = 5.0  # the last control this much hotter than the first: said, when the drift matters


@dataclass(frozen=True)
class ArmOutcome:
    """What the verdict reads of one arm."""

    number: int  # 1-based, in run order
    role: Role
    profile: str
    metrics: dict[str, float | None]
    cold: bool | None  # None: unproven
    requests: int
    failed: int
    first_error: str = ""
    peak_c: float | None = None
    died: str = ""  # its server died while it was measured: how
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    quality_error: str = ""  # the owner's quality command failed on this arm: how

    @property
    def completed(self) -> int:
        return self.requests - self.failed


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
    verdict: VerdictKind
    reason: str  # the first of the reasons
    control_mean: float | None
    candidate_mean: float | None
    change: float | None  # the candidate's relative improvement in the gate's direction
    control_drift: float | None  # (max - min) / mean of the controls' gate metric
    guards: tuple[GuardResult, ...] = ()
    notes: tuple[str, ...] = field(default=())
    reasons: tuple[str, ...] = ()  # every check that failed or stood in the way, in that order
    candidate: str = ""
    candidate_drift: float | None = None  # (max - min) / mean over the candidate's own runs
    evidence: tuple[str, ...] = ()  # what each arm rests on


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _raw_pct(change: float, control: float | None, candidate: float | None) -> str:
    """The metric's own relative change, signed as the table shows it (a TTFT that fell is
    negative), not the improvement (positive when better), so the headline and the table agree."""
    if control is None or candidate is None or control == 0:
        return _pct(change)
    return _pct((candidate - control) / abs(control))


def _moved(name: str, change: float, control: float | None, candidate: float | None) -> str:
    word = "better" if change >= 0 else "worse"
    if METRICS[name].better == "higher":
        return f"{name} {_pct(change)} {word} than the controls"
    return f"{name} {_raw_pct(change, control, candidate)} against the controls ({word}: lower is better)"


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


def surrounding(arms: Sequence[ArmOutcome], candidate: str) -> list[ArmOutcome]:
    """The controls next to each run of `candidate` (the one before it and the one after)."""
    out: list[ArmOutcome] = []
    for at, arm in enumerate(arms):
        if arm.role == "candidate" and arm.profile == candidate:
            for near in (at - 1, at + 1):
                if 0 <= near < len(arms) and arms[near].role == "control" and all(o.number != arms[near].number for o in out):
                    out.append(arms[near])
    return sorted(out, key=lambda a: a.number)


def decide(
    gate: Gate, arms: Sequence[ArmOutcome], candidate: str | None = None, noise: float | None = None, changes: int | None = None
) -> Verdict:
    """`candidate`: whose verdict (default: the first candidate's); `noise`: the rig's measured
    boot-to-boot spread of the gate metric for the control, when known; `changes`: how many things
    the candidate changes (0: an A/A run in effect)."""
    all_controls = [a for a in arms if a.role == "control"]
    name = candidate or next((a.profile for a in arms if a.role == "candidate"), "")
    candidates = [a for a in arms if a.role == "candidate" and a.profile == name]
    controls = surrounding(arms, name) or all_controls
    metric = METRICS[gate.metric]
    c, c_missing = _values(controls, gate.metric)
    b, b_missing = _values(candidates, gate.metric)
    spread = drift(_values(all_controls, gate.metric)[0])
    own = drift(b)
    control_mean = _mean(c) if c else None
    candidate_mean = _mean(b) if b else None
    guards = tuple(_guard(g.metric, g.max_regression, controls, candidates) for g in gate.guards)
    hard: list[str] = []  # the run cannot decide
    rejects: list[str] = []  # the candidate failed the gate
    doubts: list[str] = []  # a promotion cannot be trusted
    change: float | None = None
    if len(all_controls) < 2 or not candidates:
        hard.append("a verdict needs two control arms around the candidate; the run stopped short")
    for arm in controls:  # a control that failed voids the comparison; a candidate that failed loses it
        hard += _failures(arm, "control")
    for arm in candidates:
        rejects += _failures(arm, "candidate")
    for arm in c_missing + b_missing:
        if not arm.died:
            hard.append(f"{gate.metric} was not measured in arm {arm.number} ({arm.profile})")
    if spread is not None and spread > gate.min_change:
        hard.append(
            f"the controls differ by {_pct(spread).lstrip('+')} on {gate.metric}, more than the gate's "
            f"{gate.min_change * 100:.1f}%: this rig is too noisy to tell"
        )
    if own is not None and own > gate.min_change:
        hard.append(
            f"the candidate's own runs differ by {_pct(own).lstrip('+')} on {gate.metric}, more than the "
            f"gate's {gate.min_change * 100:.1f}%: its boot-to-boot noise hides the change"
        )
    if control_mean is not None and candidate_mean is not None:
        change = improvement(metric, control_mean, candidate_mean)
        if change is None:
            hard.append(f"the controls' {gate.metric} is 0: a relative change from nothing means nothing")
        elif change < gate.min_change:
            rejects.append(
                f"{_moved(gate.metric, change, control_mean, candidate_mean)}, short of the gate's {gate.min_change * 100:.1f}%"
            )
    for guard in guards:
        if guard.ok is None:
            hard.append(f"the guard on {guard.metric} could not be checked: it was not measured in every arm")
        elif not guard.ok:
            rejects.append(
                f"the guard on {guard.metric} failed: {_pct(guard.regression or 0.0).lstrip('+')} worse, "
                f"limit {guard.limit * 100:.1f}%"
            )
    evidence = _evidence(gate, [*controls, *candidates])
    for arm in sorted({a.number: a for a in [*controls, *candidates]}.values(), key=lambda a: a.number):
        if arm.completed < gate.min_requests:
            doubts.append(
                f"arm {arm.number} ({arm.profile}) rests on {arm.completed} request(s), fewer than min_requests {gate.min_requests}"
            )
        width = relative_width(arm.intervals.get(gate.metric), arm.metrics.get(gate.metric))
        # the arm's own uncertainty (the interval's half-width, its ±) larger than the change the
        # gate asks for, unless the change clears the gate by more than that uncertainty too (a
        # +240% change measured ±34% is told; a +35% one is not)
        clear = change is not None and abs(change) - (width or 0.0) / 2 >= gate.min_change
        if width is not None and width / 2 > gate.min_change and not clear:
            doubts.append(
                f"arm {arm.number} ({arm.profile}): the 95% interval of {gate.metric} is "
                f"±{width * 50:.1f}%, wider than the gate's {gate.min_change * 100:.1f}%"
            )
    if noise is not None and change is not None and abs(change) <= noise:
        doubts.append(
            f"the rig's boot-to-boot noise spans {noise * 100:.1f}% on {gate.metric} between fresh servers "
            f"(rigctl bench calibrate): a {_pct(change)} change cannot be told from it"
        )
    if name == next((a.profile for a in all_controls), None) or changes == 0:
        doubts.append("an A/A run: the candidate changes nothing, so it measures the rig's noise and never promotes")
    kind: VerdictKind
    warm_controls = [a for a in controls if a.cold is not True]
    warm_candidates = [a for a in candidates if a.cold is not True]
    if warm_controls and (rejects or not hard):
        named = "; ".join(f"control arm {a.number} ({a.profile}) {_state(a)}" for a in warm_controls)
        hard.append(f"{named}: its figures are inflated")
    if warm_candidates:
        named = "; ".join(f"candidate arm {a.number} ({a.profile}) {_state(a)}" for a in warm_candidates)
        doubts.append(f"{named}: a warm cache cannot promote")
    notes = _notes(gate, all_controls, arms, spread, noise, candidates)
    if hard:
        kind, reasons = "inconclusive", hard + rejects + doubts  # every check that failed, named
    elif rejects:
        # thin evidence is said whatever the verdict: a reject on 12 requests is no better founded than a promotion
        thin = [d for d in doubts if "fewer than min_requests" in d or "95% interval" in d]
        kind, reasons = "reject", ([f"{rejects[0]}; on thin evidence: {thin[0]}", *rejects[1:], *thin[1:]] if thin else rejects)
    elif doubts:
        moved = _raw_pct(change or 0.0, control_mean, candidate_mean)
        kind, reasons = "inconclusive", [f"it would promote ({gate.metric} {moved}), but " + doubts[0], *doubts[1:]]
    else:
        assert change is not None and spread is not None
        kind, reasons = (
            "promote",
            [
                f"{gate.metric} {_raw_pct(change, control_mean, candidate_mean)} against the controls"
                + ("" if metric.better == "higher" else " (lower is better)")
                + f" (gate {gate.min_change * 100:.1f}%), controls within {spread * 100:.1f}%"
                + (", guards held" if guards else "")
            ],
        )
    return Verdict(
        kind,
        reasons[0],
        control_mean,
        candidate_mean,
        change,
        spread,
        guards,
        tuple(notes),
        tuple(reasons),
        name,
        own,
        tuple(evidence),
    )


def _failures(arm: ArmOutcome, role: str) -> list[str]:
    """What went wrong in an arm: its server died or requests failed, and its quality command."""
    out = []
    if arm.died:
        out.append(f"{role} arm {arm.number} ({arm.profile}): {arm.died}")
    elif arm.failed:
        out.append(f"{role} arm {arm.number} ({arm.profile}): {arm.failed} of {arm.requests} requests failed ({arm.first_error})")
    if arm.quality_error:
        out.append(f"{role} arm {arm.number} ({arm.profile}): {arm.quality_error}")
    return out


def _state(arm: ArmOutcome) -> str:
    return "ran on a warm prefix cache" if arm.cold is False else "could not be proven cold"


def _evidence(gate: Gate, arms: Sequence[ArmOutcome]) -> list[str]:
    out = []
    for arm in sorted(arms, key=lambda a: a.number):
        value, interval = arm.metrics.get(gate.metric), arm.intervals.get(gate.metric)
        shown = "" if interval is None else f", {gate.metric} 95% interval {interval[0]:.4g} to {interval[1]:.4g}"
        out.append(
            f"arm {arm.number} ({arm.role} {arm.profile}): {arm.completed} request(s)"
            + (f", {gate.metric} {value:.4g}" if value is not None else "")
            + shown
        )
    return out


def _notes(
    gate: Gate,
    controls: Sequence[ArmOutcome],
    arms: Sequence[ArmOutcome],
    spread: float | None,
    noise: float | None,
    candidates: Sequence[ArmOutcome],
) -> list[str]:
    notes = []
    temps = [a.peak_c for a in controls]
    soaked = len(temps) >= 2 and temps[0] is not None and temps[-1] is not None and temps[-1] - temps[0] >= HEAT_SOAK_C
    if soaked and spread is not None and spread >= gate.min_change / 2:  # only where the drift is material
        assert temps[0] is not None and temps[-1] is not None
        notes.append(
            f"heat soak: the last control ran {temps[-1] - temps[0]:.0f} °C hotter than the first "
            f"({temps[0]:.0f} -> {temps[-1]:.0f} °C); the controls' drift may be thermal, not the profile"
        )
    for arm in arms:
        if arm.cold is False:
            notes.append(f"arm {arm.number} ({arm.profile}) started on a warm prefix cache")
    if noise is not None:
        notes.append(
            f"the rig's boot-to-boot noise on {gate.metric}, measured by rigctl bench calibrate: "
            f"{noise * 100:.1f}% between fresh servers; a change within it never promotes"
        )
    elif len(candidates) == 1:
        notes.append(
            'the candidate ran once: its own boot-to-boot noise is unmeasured (order = "ABABA" runs it '
            "twice; `rigctl bench calibrate PLAN` measures the rig's)"
        )
    return notes
