"""Fault 7: a read-only or full state dir, and a log disk that fills during the boot. Each runs
in a private mount namespace (a small tmpfs or a read-only bind over the rig's state dir)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faults.rig import SERVED, MountNamespace, Rig, private_mounts


@pytest.fixture
def ns(rig: Rig) -> Iterator[MountNamespace]:
    with private_mounts(rig) as space:
        yield space


def _mount_tmpfs(ns: MountNamespace, rig: Rig, mib: int) -> None:
    rig.state_dir.mkdir(parents=True, exist_ok=True)
    done = ns.run("mount", "-t", "tmpfs", "-o", f"size={mib}m,mode=0700", "tmpfs", str(rig.state_dir))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


def _fill(ns: MountNamespace, rig: Rig, leave_kib: int) -> None:
    """Fill the state dir's filesystem until `leave_kib` KiB are free."""
    done = ns.run(
        "sh",
        "-c",
        f"avail=$(df -k --output=avail {rig.state_dir} | tail -1); "
        f"dd if=/dev/zero of={rig.state_dir}/filler bs=1K count=$((avail - {leave_kib})) 2>/dev/null; "
        f"df -k --output=avail {rig.state_dir} | tail -1",
    )
    assert done.returncode == 0, done.stderr


def test_a_read_only_state_dir_is_refused_before_the_stop(rig: Rig, ns: MountNamespace) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    pid = rig.record()["pid"]
    assert ns.run("mount", "--bind", str(rig.state_dir), str(rig.state_dir)).returncode == 0
    assert ns.run("mount", "-o", "remount,bind,ro", str(rig.state_dir)).returncode == 0
    refused = rig.rigctl("switch", "alt")
    assert refused.returncode == 3
    assert refused.stderr.strip() == (f"not switched: {rig.state_dir} is not writable: Read-only file system; good keeps serving")
    assert rig.record()["pid"] == pid and rig.serves()[0] == SERVED
    status = rig.rigctl("status")  # reading still works
    assert status.returncode == 0 and "serving good" in status.stdout
    stopped = rig.rigctl("stop")  # and so does a stop, which is what an owner then needs
    assert stopped.returncode == 0 and "stopped good" in stopped.stdout, stopped.stdout + stopped.stderr
    assert rig.answering() is None


def test_a_full_state_dir_is_refused_before_the_stop(rig: Rig, ns: MountNamespace) -> None:
    _mount_tmpfs(ns, rig, 24)
    assert rig.rigctl("switch", "good").returncode == 0
    _fill(ns, rig, 100)
    refused = rig.rigctl("switch", "alt")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    line = refused.stderr.strip()
    assert line.startswith(
        (
            f"not switched: the filesystem of {rig.state_dir} is full (",
            f"not switched: {rig.state_dir} is not writable: No space left on device",
        )
    ), line
    assert line.endswith("good keeps serving") and rig.serves()[0] == SERVED
    rig.check_invariants()


def test_a_log_disk_that_fills_during_the_boot_is_named(rig: Rig, ns: MountNamespace) -> None:
    _mount_tmpfs(ns, rig, 40)
    assert rig.rigctl("switch", "good").returncode == 0
    _fill(ns, rig, 20 * 1024)  # room enough to pass the check; the new boot's log floods it
    rig.add_profile("flood", '[env]\nRIGCTL_SIM_LOG_FLOOD = "33554432"\n')
    failed = rig.rigctl("switch", "flood")
    assert failed.returncode == 4, failed.stdout + failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    assert f"flood failed: the disk holding {rig.state_dir}/logs is full" in last
    assert f"rollback to good failed too: the filesystem of {rig.state_dir} is full" in last
    assert last.endswith("nothing serves")
    assert "nothing serves" in rig.status()["summary"]
    rig.check_invariants()
