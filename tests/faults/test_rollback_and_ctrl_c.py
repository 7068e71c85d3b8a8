"""Fault 3 (--timeout also cut the rollback short) and fault 8 (Ctrl-C abandoned the rollback)."""

from __future__ import annotations

import signal
import time

from tests.faults.rig import SERVED, Rig

SLOW = '[env]\nRIGCTL_SIM_TIME_SCALE = "0.05"\n'  # a boot of about three seconds
STUCK = '[env]\nRIGCTL_SIM_HANG_AT = "graphs"\n'


def test_the_rollback_gets_the_last_good_profiles_own_budget(rig: Rig) -> None:
    rig.add_profile("good", SLOW)
    assert rig.rigctl("switch", "good").returncode == 0
    rig.add_profile("stuck", STUCK)
    started = time.monotonic()
    failed = rig.rigctl("switch", "stuck", "--timeout", "1")
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert "not ready after 1 s" in failed.stderr and "rolled back: good serves again" in failed.stderr
    assert time.monotonic() - started > 2.5  # the rollback took the time good needs, not 1 s
    assert rig.status()["active_profile"] == "good" and rig.serves()[0] == SERVED
    rig.check_invariants()


def test_first_ctrl_c_stops_the_new_boot_and_rolls_back(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    rig.add_profile("stuck", STUCK)
    switch = rig.popen("switch", "stuck")
    rig.wait_for(switch, "KV cache allocated")
    switch.send_signal(signal.SIGINT)
    code, out = rig.finish(switch)
    assert code == 3, out
    assert "Ctrl-C: stopping the new boot and rolling back" in out
    assert "stuck failed: interrupted by Ctrl-C" in out and "rolled back: good serves again" in out
    assert rig.status()["active_profile"] == "good" and rig.serves()[0] == SERVED
    rig.check_invariants()


def test_second_ctrl_c_leaves_at_once_and_says_what_is_left(rig: Rig) -> None:
    rig.add_profile("good", SLOW)
    assert rig.rigctl("switch", "good").returncode == 0
    rig.add_profile("stuck", STUCK)
    switch = rig.popen("switch", "stuck")
    rig.wait_for(switch, "KV cache allocated")
    switch.send_signal(signal.SIGINT)
    rig.wait_for(switch, "good: vLLM started")  # the rollback's server is up and recorded
    switch.send_signal(signal.SIGINT)
    started = time.monotonic()
    code, out = rig.finish(switch)
    assert time.monotonic() - started < 2
    assert code == 4, out
    assert "left at the second Ctrl-C during the switch to stuck" in out
    assert "the server for good" in out and "is still starting, unsupervised" in out
    state = rig.state()
    assert state["status"] == "interrupted"
    rig.check_invariants()  # the rollback's server is recorded, not orphaned
    deadline = time.monotonic() + 30
    while rig.status()["active_profile"] != "good":  # it finishes booting on its own
        assert time.monotonic() < deadline
        time.sleep(0.3)
    assert rig.rigctl("stop").returncode == 0 and rig.answering() is None
