"""The whole run's ETA: every arm's boot (this run's own once it has one, else the profile's last
recorded) and measuring (the arms finished so far), a floor where a part is not known yet."""

from __future__ import annotations

import time
from pathlib import Path

from rigctl import fmt
from rigctl.bench.eta import STOP_S, Estimate, RunClock, before_the_run, last_boots
from rigctl.bench.live import ArmProgress, Phase
from rigctl.state import boots

ARMS = [("control", "a"), ("candidate", "b"), ("control", "a")]


def step(number: int, phase: Phase, eta: float | None = None) -> ArmProgress:
    return ArmProgress(
        number, 3, ARMS[number - 1][0] if number else "control", ARMS[number - 1][1] if number else "", phase, eta_s=eta
    )


def test_before_the_first_arm_only_the_boots_are_known_and_it_says_so() -> None:
    estimate = before_the_run(ARMS, {"a": 40.0, "b": 60.0}, None)
    assert estimate.floor and estimate.seconds == 40 + 60 + 40 + 3 * STOP_S
    assert estimate.describe(lambda s: f"{s:.0f} s") == f"≥ {140 + 3 * STOP_S:.0f} s"
    timed = before_the_run(ARMS, {"a": 40.0, "b": 60.0}, 30.0)  # a duration workload: its measuring is known
    assert not timed.floor and timed.seconds == 140 + 3 * STOP_S + 3 * 30


def test_a_profile_never_booted_here_makes_it_a_floor() -> None:
    assert before_the_run(ARMS, {"a": 40.0}, 30.0).floor


def test_the_run_learns_its_own_boots_and_measuring_as_it_goes() -> None:
    clock = RunClock(ARMS, {"a": 40.0, "b": 60.0})
    clock.estimate(step(1, "switching"), now=0.0)
    clock.estimate(step(1, "cold check"), now=30.0)  # a booted in 30 s this time, not 40
    mid = clock.estimate(step(1, "measuring", eta=50.0), now=40.0)
    assert mid.floor  # the measuring of the arms to come is not known until one has finished
    done = clock.estimate(step(1, "done"), now=100.0)  # 70 s from ready to done
    assert clock.boot_s["a"] == 30.0 and clock.measured == [70.0]
    assert not done.floor and done.seconds == (60 + STOP_S + 70) + (30 + STOP_S + 70)
    clock.estimate(step(2, "switching"), now=100.0)
    booting = clock.estimate(step(2, "switching"), now=120.0)  # 20 s into b's 60 s boot
    assert booting.seconds == (60 + STOP_S - 20 + 70) + (30 + STOP_S + 70)
    measuring = clock.estimate(step(2, "measuring", eta=10.0), now=190.0)
    assert measuring.seconds == 10 + (30 + STOP_S + 70)


def test_the_last_boot_of_each_profile_comes_from_the_history() -> None:
    def record(profile: str, when: float, seconds: float) -> boots.BootRecord:
        return boots.BootRecord(profile, "h", when, ["vllm"], "0.11.0", "sim", None, None, None, None, None, None, None, seconds)

    now = time.time()
    for entry in (record("a", now - 100, 90.0), record("a", now - 10, 45.0), record("b", now - 50, 70.0)):
        boots.append(entry)
    assert last_boots(["a", "b", "c"]) == {"a": 45.0, "b": 70.0}
    assert isinstance(boots.boots_file(), Path)


def test_an_estimate_that_knows_nothing_yet_says_so_not_at_least_zero() -> None:
    assert Estimate(0.0, True).describe(fmt.seconds) == "not known yet"
    assert Estimate(90.0, True).describe(fmt.seconds).startswith("≥ ")
    assert not Estimate(0.0, False).describe(fmt.seconds).startswith("≥")
