"""The verdict, by hand: the candidate against the mean of the controls, the controls' drift
against the gate, guards, failed requests and warm caches."""

from __future__ import annotations

import json
import math

import pytest

from rigctl.bench.plan import Gate, Guard, Role
from rigctl.bench.verdict import ArmOutcome, decide, drift

GATE = Gate("output_tok_per_s", "higher", 0.05)


def arm(
    number: int,
    role: Role,
    cold: bool | None = True,
    failed: int = 0,
    peak: float | None = None,
    figures: dict[str, float | None] | None = None,
    **metrics: float | None,
) -> ArmOutcome:
    return ArmOutcome(
        number,
        role,
        "ctl" if role == "control" else "cand",
        {**(figures or {}), **metrics},
        cold,
        48,
        failed,
        "HTTP 500: boom" if failed else "",
        peak,
    )


def roles(a1: float, b: float, a2: float) -> list[tuple[int, Role, float]]:
    """(number, role, figure) of an ABA run's arms."""
    return [(1, "control", a1), (2, "candidate", b), (3, "control", a2)]


def aba(a1: float, b: float, a2: float, extra: dict[int, dict[str, float | None]] | None = None) -> list[ArmOutcome]:
    extra = extra or {}
    return [
        arm(1, "control", figures={"output_tok_per_s": a1, **extra.get(1, {})}),
        arm(2, "candidate", figures={"output_tok_per_s": b, **extra.get(2, {})}),
        arm(3, "control", figures={"output_tok_per_s": a2, **extra.get(3, {})}),
    ]


def test_async_scheduling_promoted_at_the_owners_figures() -> None:
    verdict = decide(GATE, aba(208.0, 262.0, 210.0))  # +25.4% against the controls' 209
    assert verdict.verdict == "promote"
    assert verdict.control_mean == 209.0 and verdict.candidate_mean == 262.0
    assert verdict.change == pytest.approx(53 / 209)
    assert verdict.control_drift == pytest.approx(2 / 209)
    assert verdict.reason == ("output_tok_per_s +25.4% against the controls (gate 5.0%), controls within 1.0%")


def test_a_gain_short_of_the_gate_is_rejected_with_the_figure() -> None:
    verdict = decide(GATE, aba(300.0, 304.32, 300.0))  # the halved batch-token budget: +1.44%
    assert verdict.verdict == "reject"
    assert verdict.reason == "output_tok_per_s +1.4% better than the controls, short of the gate's 5.0%"


def test_noisy_controls_make_it_inconclusive_whatever_the_candidate_did() -> None:
    verdict = decide(GATE, aba(200.0, 400.0, 220.0))
    assert verdict.verdict == "inconclusive"
    assert verdict.control_drift == pytest.approx(20 / 210)
    assert "the controls differ by 9.5% on output_tok_per_s, more than the gate's 5.0%" in verdict.reason


def test_lower_is_better_metrics_gain_when_they_fall() -> None:
    gate = Gate("ttft_p50_s", "lower", 0.05)
    arms = [arm(1, "control", ttft_p50_s=1.55), arm(2, "candidate", ttft_p50_s=1.16), arm(3, "control", ttft_p50_s=1.55)]
    verdict = decide(gate, arms)
    assert verdict.verdict == "promote" and verdict.change == pytest.approx(0.39 / 1.55)


def test_a_guard_that_regresses_rejects_a_winner() -> None:
    gate = Gate("output_tok_per_s", "higher", 0.05, (Guard("tpot_p95_s", 0.05),))
    extra: dict[int, dict[str, float | None]] = {1: {"tpot_p95_s": 0.100}, 2: {"tpot_p95_s": 0.1053}, 3: {"tpot_p95_s": 0.100}}
    verdict = decide(gate, aba(200.0, 230.0, 200.0, extra=extra))
    assert verdict.verdict == "reject"
    assert verdict.guards[0].regression == pytest.approx(0.053) and verdict.guards[0].ok is False
    assert "the guard on tpot_p95_s failed: 5.3% worse, limit 5.0%" in verdict.reason
    held = decide(gate, aba(200.0, 230.0, 200.0, extra={1: {"tpot_p95_s": 0.1}, 2: {"tpot_p95_s": 0.102}, 3: {"tpot_p95_s": 0.1}}))
    assert held.verdict == "promote" and held.reason.endswith("guards held")


def test_a_guard_from_zero_counts_any_step_the_wrong_way() -> None:
    gate = Gate("output_tok_per_s", "higher", 0.05, (Guard("preemptions", 0.10),))
    verdict = decide(gate, aba(200.0, 230.0, 200.0, extra={1: {"preemptions": 0}, 2: {"preemptions": 3}, 3: {"preemptions": 0}}))
    assert verdict.verdict == "reject" and math.isinf(verdict.guards[0].regression or 0)


def test_a_warm_cache_never_promotes() -> None:
    arms = aba(200.0, 300.0, 200.0)
    arms[1] = arm(2, "candidate", cold=False, output_tok_per_s=300.0)
    verdict = decide(GATE, arms)
    assert verdict.verdict == "inconclusive"
    assert "arm 2 (cand) ran on a warm prefix cache: a warm cache cannot promote" in verdict.reason
    assert "arm 2 (cand) started on a warm prefix cache" in verdict.notes


def test_a_candidate_that_lost_warm_stays_rejected_but_a_warm_control_voids_a_rejection() -> None:
    arms = aba(200.0, 190.0, 200.0)
    arms[1] = arm(2, "candidate", cold=False, output_tok_per_s=190.0)
    assert decide(GATE, arms).verdict == "reject"
    arms = aba(200.0, 190.0, 200.0)
    arms[0] = arm(1, "control", cold=None, output_tok_per_s=200.0)
    verdict = decide(GATE, arms)
    assert verdict.verdict == "inconclusive" and "could not be proven cold" in verdict.reason


def test_the_warm_arms_named_are_the_ones_that_were_warm() -> None:
    """A warm candidate and a warm control behind a rejection: the reason names the control (the arm
    whose warmth voids it), never the candidate as 'control arm 2'."""
    arms = aba(200.0, 190.0, 200.0)
    arms[1] = arm(2, "candidate", cold=False, output_tok_per_s=190.0)
    arms[2] = arm(3, "control", cold=False, output_tok_per_s=200.0)
    verdict = decide(GATE, arms)
    assert verdict.verdict == "inconclusive"
    assert "control arm 3 (ctl) ran on a warm prefix cache: its figures are inflated" in verdict.reason
    assert "arm 2" not in verdict.reason
    arms = aba(200.0, 300.0, 200.0)
    arms[0] = arm(1, "control", cold=False, output_tok_per_s=200.0)
    arms[1] = arm(2, "candidate", cold=None, output_tok_per_s=300.0)
    verdict = decide(GATE, arms)
    assert verdict.verdict == "inconclusive"
    assert verdict.reasons == (
        "control arm 1 (ctl) ran on a warm prefix cache: its figures are inflated",
        "candidate arm 2 (cand) could not be proven cold: a warm cache cannot promote",
    )


def test_a_server_that_died_is_the_reason() -> None:
    arms = aba(200.0, 300.0, 200.0)
    arms[1] = ArmOutcome(
        2,
        "candidate",
        "cand",
        {"output_tok_per_s": 150.0},
        True,
        48,
        20,
        "connection failed",
        None,
        "its server (pid 7) was killed by SIGKILL during the measured requests",
    )
    verdict = decide(GATE, arms)
    assert verdict.verdict == "reject"
    assert verdict.reason == "candidate arm 2 (cand): its server (pid 7) was killed by SIGKILL during the measured requests"
    arms = aba(200.0, 300.0, 200.0)
    arms[2] = ArmOutcome(3, "control", "ctl", {"output_tok_per_s": 100.0}, True, 48, 0, "", None, "its server died")
    assert decide(GATE, arms).reason == "control arm 3 (ctl): its server died"


def test_failed_requests_reject_a_candidate_and_void_a_control() -> None:
    arms = aba(200.0, 300.0, 200.0)
    arms[1] = arm(2, "candidate", failed=3, output_tok_per_s=300.0)
    verdict = decide(GATE, arms)
    assert verdict.verdict == "reject" and "3 of 48 requests failed (HTTP 500: boom)" in verdict.reason
    arms = aba(200.0, 300.0, 200.0)
    arms[2] = arm(3, "control", failed=1, output_tok_per_s=200.0)
    assert decide(GATE, arms).verdict == "inconclusive"


def test_an_unmeasured_gate_metric_is_inconclusive_and_a_short_run_cannot_decide() -> None:
    gate = Gate("j_per_token", "lower", 0.05)
    verdict = decide(
        gate, [arm(1, "control", j_per_token=0.5), arm(2, "candidate", j_per_token=None), arm(3, "control", j_per_token=0.5)]
    )
    assert verdict.verdict == "inconclusive" and verdict.reason == "j_per_token was not measured in arm 2 (cand)"
    short = decide(GATE, aba(200.0, 300.0, 200.0)[:2])
    assert short.verdict == "inconclusive" and "two control arms" in short.reason


def test_ababa_uses_every_arm_and_notes_heat_soak_only_where_the_drift_matters() -> None:
    arms = [
        arm(1, "control", peak=52.0, output_tok_per_s=200.0),
        arm(2, "candidate", output_tok_per_s=260.0),
        arm(3, "control", peak=55.0, output_tok_per_s=204.0),
        arm(4, "candidate", output_tok_per_s=250.0),
        arm(5, "control", peak=61.0, output_tok_per_s=202.0),
    ]
    verdict = decide(GATE, arms)
    assert verdict.control_mean == pytest.approx(202.0) and verdict.candidate_mean == pytest.approx(255.0)
    assert verdict.control_drift == pytest.approx(4 / 202) and verdict.verdict == "promote"
    assert verdict.candidate_drift == pytest.approx(10 / 255)
    assert not any(n.startswith("heat soak") for n in verdict.notes)  # a 2% drift under a 5% gate: immaterial
    arms[4] = arm(5, "control", peak=61.0, output_tok_per_s=209.0)  # 4.5% apart: half the gate or more
    notes = decide(GATE, arms).notes
    assert notes[0].startswith("heat soak: the last control ran 9 °C hotter than the first (52 -> 61 °C)")


def test_every_failing_check_is_named() -> None:
    gate = Gate("output_tok_per_s", "higher", 0.05, (Guard("tpot_p95_s", 0.05), Guard("ttft_p95_s", 0.10)))
    arms = [
        arm(1, "control", output_tok_per_s=200.0, tpot_p95_s=0.050, ttft_p95_s=1.0),
        arm(2, "candidate", output_tok_per_s=201.0, tpot_p95_s=0.060, ttft_p95_s=1.5),
        arm(3, "control", output_tok_per_s=200.0, tpot_p95_s=0.050, ttft_p95_s=1.0),
    ]
    verdict = decide(gate, arms)
    assert verdict.verdict == "reject" and len(verdict.reasons) == 3, verdict.reasons
    assert verdict.reasons[0].startswith("output_tok_per_s +0.5% better than the controls, short of the gate")
    assert verdict.reasons[1] == "the guard on tpot_p95_s failed: 20.0% worse, limit 5.0%"
    assert verdict.reasons[2] == "the guard on ttft_p95_s failed: 50.0% worse, limit 10.0%"


def test_too_few_requests_or_a_wide_interval_cannot_promote() -> None:
    few = [
        ArmOutcome(n, r, "ctl" if r == "control" else "cand", {"output_tok_per_s": v}, True, 8, 0)
        for n, r, v in roles(200.0, 300.0, 200.0)
    ]
    verdict = decide(GATE, few)
    assert verdict.verdict == "inconclusive" and verdict.change == pytest.approx(0.5)
    assert "arm 1 (ctl) rests on 8 request(s), fewer than min_requests 20" in verdict.reason

    def wide(candidate: float) -> list[ArmOutcome]:
        return [
            ArmOutcome(
                n,
                r,
                "ctl" if r == "control" else "cand",
                {"output_tok_per_s": v},
                True,
                48,
                0,
                intervals={"output_tok_per_s": (v * 0.9, v * 1.1)},
            )
            for n, r, v in roles(200.0, candidate, 200.0)
        ]

    verdict = decide(GATE, wide(212.0))  # +6% against a 5% gate, each figure known to ±10%
    assert verdict.verdict == "inconclusive"
    assert "the 95% interval of output_tok_per_s is ±10.0%, wider than the gate's 5.0%" in verdict.reason
    assert len(verdict.evidence) == 3 and "48 request(s)" in verdict.evidence[0]
    # +50% clears the gate by more than the ±10%: the width cannot hide it
    assert decide(GATE, wide(300.0)).verdict == "promote"


def test_an_aa_run_and_a_change_within_the_noise_never_promote() -> None:
    same = [
        arm(1, "control", output_tok_per_s=152.0),
        arm(2, "control", output_tok_per_s=222.0),
        arm(3, "control", output_tok_per_s=154.0),
    ]
    same[1] = ArmOutcome(2, "candidate", "ctl", {"output_tok_per_s": 222.0}, True, 48, 0)  # the control, again
    verdict = decide(GATE, same)
    assert verdict.verdict == "inconclusive" and "an A/A run" in verdict.reason  # the simulator's +45%
    verdict = decide(GATE, aba(200.0, 230.0, 200.0), noise=0.40)
    assert verdict.verdict == "inconclusive"
    assert (
        "the rig's boot-to-boot noise spans 40.0% on output_tok_per_s between fresh servers (rigctl bench "
        "calibrate): a +15.0% change cannot be told from it"
    ) in verdict.reason
    assert any("measured by rigctl bench calibrate: 40.0% between fresh servers" in n for n in verdict.notes)
    assert decide(GATE, aba(200.0, 230.0, 200.0), changes=0).verdict == "inconclusive"


def test_each_of_several_candidates_is_judged_against_the_controls_around_it() -> None:
    arms = [
        arm(1, "control", output_tok_per_s=200.0),
        ArmOutcome(2, "candidate", "awq", {"output_tok_per_s": 260.0}, True, 48, 0),
        arm(3, "control", output_tok_per_s=204.0),
        ArmOutcome(4, "candidate", "fp8", {"output_tok_per_s": 190.0}, True, 48, 0),
        arm(5, "control", output_tok_per_s=208.0),
    ]
    awq, fp8 = decide(GATE, arms, "awq"), decide(GATE, arms, "fp8")
    assert awq.verdict == "promote" and awq.control_mean == pytest.approx(202.0) and awq.candidate == "awq"
    assert fp8.verdict == "reject" and fp8.control_mean == pytest.approx(206.0)
    assert awq.control_drift == fp8.control_drift == pytest.approx(8 / 204)  # over all the controls


def test_drift_of_identical_and_zero_controls() -> None:
    assert drift([5.0, 5.0]) == 0.0 and drift([0.0, 0.0]) == 0.0 and drift([0.0, 1.0]) == 2.0
    assert math.isinf(drift([-1.0, 1.0]) or 0)
    assert drift([3.0]) is None


def test_a_lower_is_better_gain_is_said_with_the_tables_sign() -> None:
    """The 3090 owner's async scheduling: median TTFT 1.55 -> 1.16 s. The headline says -25.2%
    (the figure fell, as the table shows it) and that lower is better; `change` stays the gain."""
    gate = Gate("ttft_p50_s", "lower", 0.05)
    arms = [arm(1, "control", ttft_p50_s=1.55), arm(2, "candidate", ttft_p50_s=1.16), arm(3, "control", ttft_p50_s=1.55)]
    verdict = decide(gate, arms)
    assert verdict.verdict == "promote" and verdict.change == pytest.approx(0.39 / 1.55)
    assert verdict.reason.startswith("ttft_p50_s -25.2% against the controls (lower is better) (gate 5.0%)"), verdict.reason
    worse = decide(
        gate, [arm(1, "control", ttft_p50_s=1.55), arm(2, "candidate", ttft_p50_s=1.57), arm(3, "control", ttft_p50_s=1.55)]
    )
    assert worse.verdict == "reject"
    assert worse.reason == "ttft_p50_s +1.3% against the controls (worse: lower is better), short of the gate's 5.0%"


def test_a_reject_on_too_few_requests_says_its_evidence_is_thin() -> None:
    """Twelve requests an arm and a -1.2% change: rejected, and marked as resting on too little."""
    gate = Gate("output_tok_per_s", "higher", 0.05, min_requests=100)
    verdict = decide(gate, aba(300.0, 296.4, 300.0))
    assert verdict.verdict == "reject"
    assert verdict.reason.startswith("output_tok_per_s -1.2% worse than the controls, short of the gate's 5.0%; on thin evidence: ")
    assert "rests on 48 request(s), fewer than min_requests 100" in verdict.reason


def test_the_list_signs_a_change_as_the_metric_moved() -> None:
    """A TTFT that fell 29.6% is -29.6% in `bench list`, as the run's headline and table say it
    (the kept "change" is the improvement: positive when better)."""
    from rigctl.bench.rawdir import bench_dir
    from rigctl.bench.report import list_rows

    for name, metric, direction, control, candidate, improvement in (
        ("20261206-0101-ttft", "ttft_p50_s", "lower", 1.55, 1.091, 0.296),
        ("20261206-0102-tps", "output_tok_per_s", "higher", 166.8, 210.1, 0.26),
    ):
        run = bench_dir() / name
        run.mkdir(parents=True)
        (run / "run.json").write_text(
            json.dumps({"started": 0, "arms": [["control", "a"], ["candidate", "b"]], "gate": {"metric": metric}})
        )
        verdict = {"verdict": "promote", "change": improvement, "control_mean": control, "candidate_mean": candidate}
        (run / "verdict.json").write_text(json.dumps({**verdict, "gate": {"metric": metric, "direction": direction}}))
    rows = {row[0]: row for row in list_rows()[1:]}
    assert rows["20261206-0101-ttft"][4] == "-29.6%" and rows["20261206-0102-tps"][4] == "+26.0%"
