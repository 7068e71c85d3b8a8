"""No file in rigctl's state dir is opened through a symbolic link. Some owners run rigctl as root
under systemd: a link planted in place of history.jsonl, a lock, the next server log or the logs
dir would have root append to, truncate, overwrite or chmod whatever it points at. Each case plants
the link, runs the real CLI, and checks the link's target is untouched and the cause is one line
naming the path."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from tests.faults.rig import SERVED, Rig

PRECIOUS = "precious: not rigctl's\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    target = tmp_path / "victim" / "precious.txt"
    target.parent.mkdir()
    target.write_text(PRECIOUS)
    target.chmod(0o644)
    return target


def untouched(path: Path) -> bool:
    return path.read_text() == PRECIOUS and stat.S_IMODE(path.stat().st_mode) == 0o644


def plant(link: Path, target: Path) -> None:
    if link.is_dir() and not link.is_symlink():
        for child in link.iterdir():
            child.unlink()
        link.rmdir()
    elif link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(target)


@pytest.mark.parametrize("name", ["history.jsonl", "rig.lock"])
def test_a_link_in_place_of_a_state_file_refuses_the_switch_before_the_stop(rig: Rig, victim: Path, name: str) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    path = rig.state_dir / name
    plant(path, victim)
    switched = rig.rigctl("switch", "alt")
    out = switched.stdout + switched.stderr
    assert switched.returncode == 3, out
    assert f"{path}: a symbolic link" in out and "good keeps serving" in out, out
    assert untouched(victim)
    assert rig.status()["active_profile"] == "good" and rig.serves()[0] == SERVED
    path.unlink()
    rig.check_invariants()


def test_a_link_in_place_of_the_history_is_named_when_it_is_read(rig: Rig, victim: Path) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    plant(rig.state_dir / "history.jsonl", victim)
    history = rig.rigctl("history")
    assert history.returncode == 1 and f"{rig.state_dir / 'history.jsonl'}: damaged (a symbolic link" in history.stderr
    assert untouched(victim)


def test_a_link_in_place_of_the_rig_lock_is_one_line_for_stop_too(rig: Rig, victim: Path) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    plant(rig.state_dir / "rig.lock", victim)
    stopped = rig.rigctl("stop")
    assert stopped.returncode == 1 and stopped.stderr.strip().count("\n") == 0, stopped.stderr
    assert f"{rig.state_dir / 'rig.lock'}: a symbolic link" in stopped.stderr
    assert untouched(victim) and rig.serves()[0] == SERVED
    (rig.state_dir / "rig.lock").unlink()


def test_the_logs_dir_as_a_link_is_refused_and_its_target_not_chmodded(rig: Rig, tmp_path: Path) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    elsewhere.chmod(0o755)
    plant(rig.state_dir / "logs", elsewhere)
    switched = rig.rigctl("switch", "alt")
    out = switched.stdout + switched.stderr
    assert switched.returncode == 3 and f"{rig.state_dir / 'logs'}: a symbolic link" in out, out
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755 and not list(elsewhere.iterdir())
    assert rig.status()["active_profile"] == "good"


def test_a_link_planted_under_the_next_logs_name_is_passed_over(rig: Rig, victim: Path) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    logs = rig.state_dir / "logs"
    now = time.time()
    for second in range(-2, 60):  # every name the next boot's log could take in the next minute
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now + second))
        (logs / f"{stamp}-alt.log").symlink_to(victim)
    switched = rig.rigctl("switch", "alt")
    assert switched.returncode == 0, switched.stdout + switched.stderr
    log = Path(rig.record()["log_path"])
    assert not log.is_symlink() and log.is_file() and log.stat().st_size > 0
    assert untouched(victim)
    rig.check_invariants()


def test_a_link_in_place_of_the_server_record_is_never_followed(rig: Rig, victim: Path) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    pid = rig.record()["pid"]
    path = rig.state_dir / "server.json"
    plant(path, victim)
    status = rig.status()
    assert status["active_profile"] == "good" and status["server"]["pid"] == pid, status
    assert any(f"{path}: damaged (a symbolic link" in n for n in status["notes"]), status
    assert not path.is_symlink() and untouched(victim)  # the record rebuilt beside, the link replaced
    rig.check_invariants()


@pytest.mark.parametrize("name", ["record.lock", "record.sqlite", "record.sqlite-wal"])
def test_a_link_in_the_records_place_is_one_line_and_never_written(rig: Rig, victim: Path, name: str) -> None:
    rig.state_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(rig.state_dir, 0o700)
    plant(rig.state_dir / name, victim)
    recorded = rig.rigctl("record", "--interval", "1", timeout=30)
    assert recorded.returncode == 1, recorded.stderr
    assert f"{rig.state_dir / name}: a symbolic link" in recorded.stderr, recorded.stderr
    assert recorded.stderr.strip().splitlines()[-1].startswith("rigctl: ")
    if name == "record.sqlite":  # (beside no record, a planted -wal is simply never opened)
        report = rig.rigctl("report")
        assert report.returncode == 1 and f"{rig.state_dir / name}: a symbolic link" in report.stderr, report.stderr
    assert untouched(victim)


def test_a_link_in_place_of_the_watch_lock_is_one_line_and_never_written(rig: Rig, victim: Path) -> None:
    rig.state_dir.mkdir(parents=True, exist_ok=True)
    os.chmod(rig.state_dir, 0o700)
    plant(rig.state_dir / "watch.lock", victim)
    watched = rig.rigctl("watch", "--interval", "1", timeout=30)
    assert watched.returncode == 1, watched.stderr
    assert f"{rig.state_dir / 'watch.lock'}: a symbolic link" in watched.stderr, watched.stderr
    assert watched.stderr.strip().splitlines()[-1].startswith("rigctl: ") and "Traceback" not in watched.stderr
    assert untouched(victim)


def test_a_planted_alerts_file_is_never_believed_nor_written_through(rig: Rig, victim: Path) -> None:
    """alerts.json says what fires to status and status --check: a link there (or a file a dead
    watcher left) is not a watcher's word, and the service replaces the link, never its target."""
    assert rig.rigctl("switch", "good").returncode == 0
    plant(rig.state_dir / "alerts.json", victim)
    check = rig.rigctl("status", "--check", "--window", "0.5")
    assert check.returncode == 0 and check.stdout.startswith("healthy: good serves"), check.stdout + check.stderr
    assert "alerts: nothing watches this rig" in rig.rigctl("status").stdout
    watch = rig.popen("watch", "--interval", "1")
    try:
        deadline = time.monotonic() + 60
        while (rig.state_dir / "alerts.json").is_symlink() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not (rig.state_dir / "alerts.json").is_symlink() and untouched(victim)
        assert "alerts: nothing watches" not in rig.rigctl("status").stdout
    finally:
        watch.terminate()
        watch.communicate(timeout=60)
    assert watch.returncode == 0
    assert "alerts: nothing watches this rig" in rig.rigctl("status").stdout  # its file went with it
    rig.check_invariants()


def test_a_link_in_place_of_the_switch_journal_is_never_written_and_named_when_read(rig: Rig, victim: Path) -> None:
    """The journal is an afterword: a switch still switches (saying the journal was not written),
    the link's target is untouched, and reading the journal names the path in one line."""
    assert rig.rigctl("switch", "good").returncode == 0
    journal = rig.state_dir / "switches.jsonl"
    plant(journal, victim)
    done = rig.rigctl("switch", "alt")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the switch journal could not be written" in done.stdout and rig.serves()[0] == SERVED
    assert untouched(victim) and journal.is_symlink()
    shown = rig.rigctl("history", "--switches")
    assert shown.returncode == 1 and shown.stderr.count("\n") == 1
    assert f"{journal}: damaged (a symbolic link" in shown.stderr
    scrape = rig.rigctl("exporter", "--once")
    assert scrape.returncode == 0 and "rigctl_switches_total{" not in scrape.stdout  # no sample believed through it
    assert untouched(victim)
