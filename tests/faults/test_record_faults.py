"""The serving record under faults, through the real CLI: a clock that disagrees with the record
deletes nothing; trouble that passes by itself (a full disk, a lock another program holds, a
damaged server.json for a moment) never ends the recorder, which says it once and loses no row;
what will not pass (a read-only dir, a newer schema) is one line; a scrape that is not vLLM's
writes no row; an empty file is an empty record."""

from __future__ import annotations

import itertools
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rigctl.config import load_settings
from rigctl.monitor import Monitor
from rigctl.record.reader import RecordReader
from rigctl.record.rows import Row
from rigctl.record.store import RecordWriter
from tests.faults.rig import MountNamespace, Rig, crashed, private_mounts
from tests.support.bad_servers import bad_server
from tests.support.waiting import wait_until

DAY = 86400.0


def _rows(path: Path, count: int, newest: float) -> list[Row]:
    rows = [
        Row(
            newest - (count - 1 - i) * 10.0,
            10.0,
            "good",
            "boot-1",
            400_000,
            0.2,
            2.0,
            1.0,
            0.0,
            {"prompt_tokens": 100.0, "generation_tokens": 50.0},
            {"stop": 1.0},
        )
        for i in range(count)
    ]
    writer = RecordWriter(path)
    for row in rows:
        writer.add(row)
    writer.close()
    return rows


def _record(
    rig: Rig,
    *args: str,
    seconds: float,
    env: dict[str, str] | None = None,
    prefix: tuple[str, ...] = (),
    during: Callable[[list[str]], None] | None = None,
) -> tuple[int, str]:
    """`rigctl record` run for `seconds`, then SIGTERM (as systemd stops it); (exit code, stderr)."""
    proc = subprocess.Popen(
        [*(prefix or rig.prefix), sys.executable, "-m", "rigctl", "record", *args],
        env={**rig.env, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    # its stderr as it comes, for a `during` that waits on what it says: this thread is its only
    # reader (communicate() beside it took some lines for itself and closed the pipe under it)
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(iter(proc.stderr.readline, "")) if proc.stderr else None, daemon=True)
    reader.start()
    deadline = time.monotonic() + seconds
    try:
        if during is not None:
            during(said)
        time.sleep(max(0.0, deadline - time.monotonic()))
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:  # a `during` that failed (or a test's timeout) leaves no recorder running
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(30)
    if proc.stderr is not None:
        proc.stderr.close()
    err = "".join(said)
    assert not crashed(err), err
    return proc.returncode, err


def _libfaketime() -> str | None:
    """Debian's libfaketime, preloaded straight into rigctl (the faketime wrapper forks, and the
    SIGTERM a systemd stop sends would reach the wrapper, not the recorder)."""
    if shutil.which("faketime") is None:
        return None
    found = sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1")) + sorted(
        Path("/usr/lib").glob("faketime/libfaketime.so.1")
    )
    return str(found[0]) if found else None


@pytest.mark.skipif(_libfaketime() is None, reason="faketime is not installed (apt-get install faketime)")
def test_a_clock_forty_days_ahead_deletes_nothing(rig: Rig) -> None:
    rig.state_dir.mkdir(parents=True, exist_ok=True)
    path = rig.state_dir / "record.sqlite"
    written = _rows(path, 50, time.time() - 60)
    code, err = _record(
        rig,
        "--interval",
        "1",
        seconds=3,
        env={"LD_PRELOAD": _libfaketime() or "", "FAKETIME": "+40d", "FAKETIME_DONT_FAKE_MONOTONIC": "1"},
    )
    assert code == 0, err
    assert "days ahead of the record's newest row" in err and "nothing is downsampled or dropped" in err, err
    assert err.count("days ahead of the record's newest row") == 1
    kept = RecordReader(path).rows()
    assert [r.ts for r in kept] == [r.ts for r in written]


def test_with_the_clock_right_old_rows_are_still_dropped(rig: Rig) -> None:
    """The rule keeps a wrong clock from deleting; it does not stop retention: rows past 30 days go
    once the record has a row the clock agrees with."""
    rig.state_dir.mkdir(parents=True, exist_ok=True)
    path = rig.state_dir / "record.sqlite"
    _rows(path, 5, time.time() - 40 * DAY)
    writer = RecordWriter(path)
    try:
        assert writer.compact() == (0, 0)  # the newest row is 40 days old: the clock is not trusted
        writer.add(Row(time.time(), 10.0, "good", "boot-2"))
        assert writer.compact()[1] == 5
    finally:
        writer.close()


def test_a_damaged_server_record_for_a_moment_does_not_end_the_recorder(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    record = rig.state_dir / "server.json"
    good = record.read_text()

    db = rig.state_dir / "record.sqlite"

    def written() -> int:
        return len(RecordReader(db).rows()) if db.exists() else 0

    def damage_for_a_moment(said: list[str]) -> None:
        # from the recorder's first row (it runs: a loaded machine may take seconds to start it),
        # damaged until it has said so (however long a starved recorder takes to look), then
        # repaired until it says so and writes a row after
        wait_until("the recorder's first row", written)
        record.write_text('{"launcher": ')
        wait_until("the recorder to see the damage", lambda: any("server.json: damaged" in line for line in said))
        record.write_text(good)
        wait_until("the recorder to read it again", lambda: any("readable again" in line for line in said))
        before = written()
        wait_until("a row after the repair", lambda: written() > before)

    code, err = _record(rig, "--interval", "1", seconds=9, during=damage_for_a_moment)
    assert code == 0, err
    assert err.count("server.json: damaged") == 1 and "the server record is readable again" in err, err
    rows = RecordReader(rig.state_dir / "record.sqlite").rows()
    assert len(rows) >= 3 and {r.profile for r in rows} == {"good"}


class DamagesTheRecord(BaseHTTPRequestHandler):
    """An endpoint that, asked anything, first damages the server record that named it: the damage
    lands inside a poll, after its read of server.json, before its check of what serves."""

    record: Path
    damaged: list[str]

    def do_GET(self) -> None:
        if not self.damaged:
            self.record.write_text('{"launcher": ')
            self.damaged.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_damage_that_lands_inside_a_poll_is_named_by_the_next(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    # the test above, once in twenty loaded runs: its damage landed while the recorder scraped, the
    # poll's check of what serves read server.json a second time, found it damaged and rebuilt it
    # from the server's boot token, and no poll ever named the damage. One read a poll now.
    assert rig.rigctl("switch", "good").returncode == 0
    for key in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(key, rig.env[key])
    record = rig.state_dir / "server.json"
    damaged: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (DamagesTheRecord,), {"record": record, "damaged": damaged}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    pointed = json.loads(record.read_text())
    record.write_text(json.dumps({**pointed, "port": server.server_address[1]}))
    monitor = Monitor(None, load_settings())
    try:
        problems = []
        for _ in range(2):
            monitor.poll_engine_now()
            problems.append(monitor.endpoint_problem)
    finally:
        monitor.close()
        server.shutdown()
        server.server_close()
    assert len(damaged) == 1, "the poll never asked the endpoint"
    assert problems[0] is None, problems
    assert problems[1] is not None and str(record) in problems[1] and "damaged" in problems[1], problems


def test_a_lock_another_program_holds_is_waited_out_and_loses_no_row(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    path = rig.state_dir / "record.sqlite"
    _rows(path, 1, time.time() - 60)
    holders: list[subprocess.Popen[str]] = []
    held: list[float] = []

    def recorded() -> list[Row]:
        return [r for r in RecordReader(path).rows() if r.boot != "boot-1"]

    def lock_for_twelve_seconds(said: list[str]) -> None:
        # once the recorder writes (a loaded machine may take seconds to start it), a lock held
        # for 12 s; then until it says it writes again (however long a starved recorder takes)
        wait_until("the recorder's first row", recorded)
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                (
                    "import sqlite3, sys, time; db = sqlite3.connect(sys.argv[1], isolation_level=None); "
                    "db.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(12); db.execute('COMMIT')"
                ),
                str(path),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        holders.append(holder)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        held.append(time.time())
        wait_until("the record written again", lambda: any("the record is written again" in line for line in said))
        wait_until("a row after the lock", lambda: recorded()[-1].ts >= held[0] + 12)

    code, err = _record(rig, "--interval", "1", seconds=22, during=lock_for_twelve_seconds)
    holders[0].wait(timeout=30)
    assert code == 0, err
    assert err.count("another program holds a lock on it") == 1 and "move it away" not in err, err
    rows = recorded()
    # the rows cover the locked stretch, each beginning where the one before it ended: kept, not lost
    assert rows[0].ts - rows[0].seconds <= held[0] and rows[-1].ts >= held[0] + 12, [(r.ts, r.seconds) for r in rows]
    gaps = [round((b.ts - b.seconds) - a.ts, 2) for a, b in itertools.pairwise(rows)]
    assert all(abs(g) < 1.0 for g in gaps), gaps


@pytest.fixture
def ns(rig: Rig) -> Iterator[MountNamespace]:
    with private_mounts(rig) as space:
        yield space


def test_a_disk_full_for_a_moment_does_not_end_the_recorder(rig: Rig, ns: MountNamespace) -> None:
    rig.state_dir.mkdir(parents=True, exist_ok=True)
    done = ns.run("mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", str(rig.state_dir))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    assert rig.rigctl("switch", "good").returncode == 0

    stretch: list[float] = []

    def fill_for_a_moment(said: list[str]) -> None:
        # full once it records, until it has said so (a starved recorder may take seconds to try
        # a write), then freed until it says it writes again
        wait_until("the recorder recording", lambda: any("recording to" in line for line in said))
        time.sleep(2)
        stretch.append(time.time())
        assert ns.run("sh", "-c", f"dd if=/dev/zero of={rig.state_dir}/filler bs=64K 2>/dev/null; true").returncode == 0
        wait_until("the recorder to see the disk full", lambda: any("rows are kept in memory" in line for line in said))
        assert ns.run("rm", "-f", f"{rig.state_dir}/filler").returncode == 0
        stretch.append(time.time())
        wait_until("the record written again", lambda: any("the record is written again" in line for line in said))

    code, err = _record(rig, "--interval", "1", seconds=13, during=fill_for_a_moment)
    assert code == 0, err
    assert "full" in err and "rows are kept in memory" in err and "the record is written again" in err, err
    listed = subprocess.run(
        [*ns.prefix, sys.executable, "-m", "rigctl", "report", "--json"], env=rig.env, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    served = json.loads(listed.stdout)["profiles"]
    # the full stretch's rows were kept in memory and written once there was room
    assert served and served[0]["profile"] == "good" and served[0]["hours_served"] * 3600 >= stretch[1] - stretch[0], served


def test_a_read_only_state_dir_is_one_line(rig: Rig, ns: MountNamespace) -> None:
    rig.state_dir.mkdir(parents=True, exist_ok=True)
    _rows(rig.state_dir / "record.sqlite", 3, time.time() - 60)
    assert ns.run("mount", "--bind", str(rig.state_dir), str(rig.state_dir)).returncode == 0
    assert ns.run("mount", "-o", "remount,bind,ro", str(rig.state_dir)).returncode == 0
    recorded = rig.rigctl("record", "--interval", "1", timeout=60)
    assert recorded.returncode == 1
    last = recorded.stderr.strip().splitlines()[-1]
    assert last.startswith("rigctl: ") and "read-only" in last.lower(), recorded.stderr
    report = rig.rigctl("report", "--json")
    assert report.returncode in (0, 1)
    if report.returncode == 1:
        assert report.stderr.strip().count("\n") == 0 and str(rig.state_dir) in report.stderr


@pytest.mark.parametrize("newer", [True, False], ids=["newer-schema", "renamed-column"])
def test_a_record_of_another_schema_is_one_line(rig: Rig, newer: bool) -> None:
    rig.state_dir.mkdir(parents=True, exist_ok=True)
    path = rig.state_dir / "record.sqlite"
    _rows(path, 3, time.time() - 60)
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE samples RENAME COLUMN energy_j TO energy_mj")
    if newer:
        db.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
    db.commit()
    db.close()
    expected = "written by a newer rigctl (record schema 3" if newer else "samples table lacks energy_j"
    for command in (("record", "--interval", "1"), ("report",), ("report", "--json")):
        done = rig.rigctl(*command, timeout=60)
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        assert done.stderr.strip().startswith(f"rigctl: {path}") and expected in done.stderr, done.stderr


def test_an_empty_record_file_is_an_empty_record(rig: Rig) -> None:
    rig.state_dir.mkdir(parents=True, exist_ok=True)
    (rig.state_dir / "record.sqlite").write_bytes(b"")
    report = rig.rigctl("report")
    assert report.returncode == 0 and report.stdout.startswith("nothing recorded yet"), report.stdout + report.stderr
    assert "no such table" not in report.stdout + report.stderr


@pytest.mark.parametrize("behaviour", ["random", "html", "empty", "not-vllm"])
def test_an_endpoint_that_is_not_vllm_is_never_recorded_as_idle_serving(rig: Rig, behaviour: str) -> None:
    rig.state_dir.mkdir(parents=True, exist_ok=True)
    with bad_server(behaviour) as server:
        (rig.state_dir / "server.json").write_text(
            json.dumps(
                {
                    "launcher": "process",
                    "profile": "good",
                    "started": time.time(),
                    "log_path": "",
                    "host": "127.0.0.1",
                    "port": server.port,
                    "served_names": ["qwen3.6-27b"],
                    "argv": [],
                    "boot_id": "b",
                }
            )
        )
        code, err = _record(rig, "--interval", "1", seconds=5)
    assert code == 0, err
    assert RecordReader(rig.state_dir / "record.sqlite").rows() == []
    if behaviour != "random":  # random bytes are not even an exposition: no scrape, nothing to say
        assert err.count("answered, but not with vLLM's metrics") == 1, err
