"""A switch on another rig through a real sshd: its progress streams here as the rig prints it,
its outcome's exit code is ours, a refusal is the rig's own line, and Ctrl-C here stops the
watching, never the switch there (which goes on to its end, rollback included)."""

from __future__ import annotations

import signal

import pytest

from tests.faults.rig import Rig, crashed
from tests.remote.conftest import Link
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow


def test_a_switch_there_shows_its_progress_and_its_exit_code_here(link: Link) -> None:
    there = link.there
    assert there.rigctl("switch", "good").returncode == 0
    done = link.here.rigctl("--rig", "box2", "switch", "alt")
    assert done.returncode == 0, done.stdout + done.stderr
    progress = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert any("alt: " in line for line in progress), done.stdout  # the boot's phases, as the rig printed them
    assert there.state()["profile"] == "alt" and there.serves()
    there.add_profile("crashes", '[env]\nRIGCTL_SIM_CRASH_AT = "load"\n')
    failed = link.here.rigctl("--rig", "box2", "switch", "crashes")
    assert failed.returncode == 3, failed.stdout + failed.stderr  # failed, rolled back: the rig's own code
    assert "FAILED" in failed.stdout
    assert there.state()["profile"] == "alt" and there.serves()
    there.check_invariants()


def test_a_switch_refused_there_is_its_own_line_and_nothing_stops(link: Link) -> None:
    there = link.there
    assert there.rigctl("switch", "good").returncode == 0
    pid = there.record()["pid"]
    there.add_profile("too-long", "max_model_len = 1048576\n")
    far = link.here.rigctl("--rig", "box2", "switch", "too-long")
    near = there.rigctl("switch", "too-long")
    assert far.returncode == near.returncode != 0
    assert far.stderr.strip().splitlines()[-1] == near.stderr.strip().splitlines()[-1]
    assert there.record()["pid"] == pid and there.serves()


def test_ctrl_c_here_leaves_the_switch_there_to_finish(link: Link) -> None:
    """The boot there hangs until its timeout; its progress is read here while it hangs (so it
    streamed), then Ctrl-C here: the rig still times the boot out and rolls back to `good`."""
    there = link.there
    assert there.rigctl("switch", "good").returncode == 0
    there.add_profile("stuck", '[env]\nRIGCTL_SIM_HANG_AT = "graphs"\n')
    watching = link.here.popen("--rig", "box2", "switch", "stuck", "--timeout", "20")
    Rig.wait_for(watching, "stuck: ")  # a phase of the hanging boot, while the switch there waits on it
    assert watching.poll() is None
    watching.send_signal(signal.SIGINT)
    code, out = Rig.finish(watching, timeout=30)
    assert code == 1 and "stopped watching; the switch goes on on rig box2" in out, out
    wait_until("the rig's switch to end", lambda: there.state_if_any().get("status") not in (None, "switching"), timeout=120)
    assert there.state()["profile"] == "good" and there.serves()
    there.check_invariants()
    assert not crashed(out)
