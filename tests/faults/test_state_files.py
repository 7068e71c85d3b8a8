"""Faults 5, 6 and 10: rigctl's own files damaged, cut or wrongly typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigctl.jsonio import DamagedFile
from rigctl.state.statefiles import ServerRecord, read_record, record_file, write_record
from tests.faults.rig import SERVED, Rig


@pytest.mark.parametrize("damage", ["", '{"launcher": "process", "prof', "[1, 2]"], ids=["empty", "cut", "not-an-object"])
def test_a_damaged_server_record_is_named_and_the_server_still_found(rig: Rig, damage: str) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    pid = rig.record()["pid"]
    path = rig.state_dir / "server.json"
    path.write_text(damage)
    status = rig.status()
    assert any(str(path) in note and "damaged" in note for note in status["notes"]), status
    assert status["active_profile"] == "good" and status["server"]["pid"] == pid  # found by its boot token
    assert rig.record()["pid"] == pid  # and the record rebuilt
    text = rig.rigctl("status")
    assert text.returncode == 0 and "serving good" in text.stdout
    path.write_text(damage)
    stopped = rig.rigctl("stop")
    assert stopped.returncode == 0 and "stopped good" in stopped.stdout, stopped.stdout + stopped.stderr
    assert str(path) in stopped.stdout + stopped.stderr
    assert rig.answering() is None
    rig.check_invariants()


def test_a_damaged_record_does_not_block_a_switch(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    (rig.state_dir / "server.json").write_text("garbage")
    switched = rig.rigctl("switch", "alt")
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert "stopping good" in switched.stdout
    assert rig.status()["active_profile"] == "alt"
    rig.check_invariants()


@pytest.mark.parametrize("field,value", [("port", "abc"), ("pid", "12"), ("served_names", "x")])
def test_wrong_typed_fields_in_the_record_are_a_named_damage(rig: Rig, field: str, value: str) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    path = rig.state_dir / "server.json"
    record = json.loads(path.read_text())
    record[field] = value
    path.write_text(json.dumps(record))
    status = rig.rigctl("status", "--json")
    assert status.returncode == 0, status.stderr
    notes = json.loads(status.stdout)["serving"]["notes"]
    assert any(f"{path}: damaged ('{field}': must be " in n and n.endswith(f", not '{value}')") for n in notes), notes
    rig.check_invariants()


def test_wrong_typed_fields_in_the_state_are_a_named_damage(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    path = rig.state_dir / "active.json"
    state = json.loads(path.read_text())
    state["since"] = "yesterday"
    path.write_text(json.dumps(state))
    status = rig.rigctl("status")
    assert status.returncode == 0 and "serving good" in status.stdout
    assert f"{path}: damaged ('since': must be a finite number, not 'yesterday')" in status.stdout + status.stderr
    assert rig.rigctl("switch", "alt").returncode == 0  # and it is rewritten by the next switch
    assert json.loads(path.read_text())["profile"] == "alt"
    rig.check_invariants()


def test_a_history_cut_mid_line_loses_no_later_record(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    path = rig.state_dir / "history.jsonl"
    path.write_bytes(path.read_bytes()[:-40])  # a crash during the append: the line is cut
    assert rig.rigctl("switch", "alt").returncode == 0
    history = rig.rigctl("history", "--json")
    assert [h["profile"] for h in json.loads(history.stdout)] == ["alt"]
    assert f"{path}: skipped 1 damaged line(s) (1)" in history.stderr
    text = rig.rigctl("history")
    assert "alt" in text.stdout and "skipped 1 damaged line" in text.stderr
    rig.check_invariants()


def test_a_history_that_cannot_be_appended_to_is_a_warning_not_a_failure(rig: Rig) -> None:
    (rig.state_dir).mkdir(parents=True, exist_ok=True)
    (rig.state_dir / "history.jsonl").mkdir()  # an append fails (EISDIR), as on a damaged filesystem
    switched = rig.rigctl("switch", "good")
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert "warning: the boot record was not written to" in switched.stdout
    assert rig.state()["status"] == "serving" and rig.status()["active_profile"] == "good"
    assert rig.serves()[0] == SERVED


def test_the_record_is_read_again_whenever_its_text_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """read_record reuses the record it built from the same text (the dashboard reads it twice a
    second); any other text, even written in place at the same size within the same clock tick, is
    read and checked again."""
    monkeypatch.setenv("RIGCTL_STATE_DIR", str(tmp_path))
    record = ServerRecord("process", "good", 1.0, "/tmp/log", "127.0.0.1", 8000, ("m",), ("vllm", "serve"), pid=100)
    write_record(record)
    first = read_record()
    assert first == record and read_record() is first  # the same text: not parsed again
    path = record_file()
    for port in (8001, 8002, 8003):  # in place, the same size, back to back: each one read
        path.write_text(path.read_text().replace(str(port - 1), str(port)))
        found = read_record()
        assert found is not None and found.port == port
    path.write_text('{"launcher": "process"}')
    with pytest.raises(DamagedFile):
        read_record()
    path.unlink()
    assert read_record() is None
    write_record(record)
    assert read_record() == record
