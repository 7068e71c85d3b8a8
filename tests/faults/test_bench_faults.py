"""`rigctl bench` keeps the switch's promise under faults, through the real CLI: whatever happens
once an arm has switched, the control serves at the end, or the output says exactly what serves
and why the control could not be put back; a bench never makes its candidate the last good
profile; a bench cut short (killed, or left at a second Ctrl-C) is said by every later command
and `rigctl bench --restore` puts the control back."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults.rig import MountNamespace, Rig, private_mounts
from tests.support.bench_rig import BenchRig
from tests.support.waiting import wait_until

LONGER = """description = "a run long enough to be interrupted"
control = "seqs2"
candidate = "seqs8"
[workload]
kind = "chat-short"
concurrency = 2
requests = 60
prompt_tokens = 256
max_tokens = 64
warmup_requests = 2
[gate]
metric = "output_tok_per_s"
min_change = 0.25
"""


@pytest.fixture
def bench_rig(tmp_path: Path) -> Iterator[BenchRig]:
    rig = BenchRig(tmp_path / "home")
    yield rig
    rig.cleanup()


def live(rig: Rig) -> dict[str, Any] | None:
    return rig.read_json(rig.state_dir / "bench" / "live.json")


def measuring(rig: Rig, arm: int) -> Any:
    def check() -> bool:
        mark = live(rig)
        return bool(mark and mark["progress"]["number"] == arm and mark["progress"]["phase"] == "measuring")

    return check


def last_good(rig: Rig) -> str | None:
    state = rig.state()
    return state["last_good"] if state else None


def test_a_candidate_that_dies_mid_arm_is_the_verdicts_reason(bench_rig: BenchRig) -> None:
    plan = bench_rig.plan("dies", text=LONGER)
    proc = bench_rig.popen("bench", str(plan), "--json")
    wait_until("arm 2 measuring", measuring(bench_rig, 2), proc)
    victim = bench_rig.record()["pid"]
    os.killpg(victim, signal.SIGKILL)  # the candidate's server dies under load (an OOM kill, a driver fault)
    code, out = Rig.finish(proc, timeout=240)
    data = json.loads(out[out.index("{") :])
    assert code == 5 and data["verdict"] == "reject", out
    assert data["reason"].startswith(
        f"candidate arm 2 (seqs8): its server (pid {victim}) was killed by SIGKILL during the measured requests"
    ), data["reason"]
    assert "drift" not in data["reason"] and "noisy" not in data["reason"]
    assert data["arms"][1]["server_died"] and data["arms"][2]["server_died"] is None
    assert bench_rig.status()["active_profile"] == "seqs2" and last_good(bench_rig) == "seqs2"
    bench_rig.check_invariants()


def test_a_plans_profiles_edited_or_broken_during_the_run_change_nothing(bench_rig: BenchRig) -> None:
    plan = bench_rig.plan("edited", text=LONGER.replace("requests = 60", "requests = 12"))
    proc = bench_rig.popen("bench", str(plan), "--json")
    wait_until("arm 1 measuring", measuring(bench_rig, 1), proc)
    (bench_rig.profiles / "seqs8.toml").write_text("this is [not toml\n")  # broken mid-run
    (bench_rig.profiles / "seqs2.toml").write_text('extends = "qwen36-27b-awq-tp2"\n[vllm]\nport = 1\n')  # edited
    code, out = Rig.finish(proc, timeout=240)
    data = json.loads(out[out.index("{") :])
    assert data["status"] == "complete" and code in (0, 5, 6), out
    assert [a["profile"] for a in data["arms"]] == ["seqs2", "seqs8", "seqs2"]
    assert all(a["completed"] == 12 for a in data["arms"])
    assert bench_rig.serves() is not None  # on the bench's port: the control as it was resolved, not as edited
    status = bench_rig.status()
    assert status["active_profile"] == "seqs2" and status["server"]["endpoint"].endswith(f":{bench_rig.port}")
    assert last_good(bench_rig) == "seqs2"


def test_two_ctrl_c_leave_saying_exactly_what_serves_and_restore_puts_the_control_back(bench_rig: BenchRig) -> None:
    plan = bench_rig.plan("cc", text=LONGER)
    proc = bench_rig.popen("bench", str(plan), "--json")
    wait_until("arm 2 measuring", measuring(bench_rig, 2), proc)
    proc.send_signal(signal.SIGINT)
    wait_until(
        "the control being put back",
        lambda: bench_rig.state_if_any().get("target") == "seqs2" and bench_rig.state_if_any().get("status") == "switching",
        proc,
    )
    proc.send_signal(signal.SIGINT)
    code, out = Rig.finish(proc, timeout=240)
    data = json.loads(out[out.index("{") :])
    assert code == 1 and data["status"] == "interrupted", out
    message = data["message"]
    assert "left at the second Ctrl-C" in message and "`rigctl bench --restore` puts it back" in message, message
    # what it says serves is what serves
    answering = bench_rig.answering() is not None
    if "nothing serves" in message:  # (a server told to stop may take a moment to be gone)
        assert not answering
        wait_until("the stopped server gone", lambda: not bench_rig.started_servers(), timeout=30)
    elif "is still starting" in message:
        assert bench_rig.record_if_any() is not None and bench_rig.started_servers(), (
            message,
            bench_rig.record(),
            Path(bench_rig.record()["log_path"]).read_text()[-3000:],
        )
    elif "seqs8 serves" in message:  # the second Ctrl-C came before the put-back stopped the candidate
        record = bench_rig.record()
        assert answering and record["profile"] == "seqs8" and f"seqs8 serves (pid {record['pid']})" in message, (
            message,
            record,
        )
    else:
        assert "seqs2 serves" in message and answering
    assert last_good(bench_rig) == "seqs2"
    bench_rig.check_invariants()
    status = bench_rig.rigctl("status")
    assert "a bench (cc) was cut short: left at the second Ctrl-C" in status.stdout, status.stdout
    restored = bench_rig.rigctl("bench", "--restore")
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert bench_rig.status()["active_profile"] == "seqs2" and live(bench_rig) is None
    assert "cut short" not in bench_rig.rigctl("status").stdout


def killed_mid_arm(rig: BenchRig, name: str) -> int:
    """A bench SIGKILLed while its candidate arm measures (a lost SSH session, the OOM killer): its pid."""
    proc = rig.popen("bench", str(rig.plan(name, text=LONGER)))
    wait_until("arm 2 measuring", measuring(rig, 2), proc)
    proc.kill()
    proc.wait(timeout=30)
    return proc.pid


def test_a_bench_killed_mid_arm_is_said_by_every_later_command(bench_rig: BenchRig) -> None:
    pid = killed_mid_arm(bench_rig, "killed")
    said = (
        f"a bench (killed) was cut short: rigctl pid {pid} died during arm 2 of 3 (candidate seqs8, "
        f"measuring); seqs8 serves, and the control seqs2 was not put back: `rigctl bench --restore` puts it back"
    )

    status = bench_rig.rigctl("status")
    assert said in status.stdout, status.stdout
    assert any(said in note for note in bench_rig.status()["notes"])
    listed = bench_rig.rigctl("bench", "list")
    assert f"cut short: rigctl pid {pid} died during arm 2 of 3" in listed.stdout, listed.stdout
    run_dir = Path(live(bench_rig)["raw_dir"])  # type: ignore[index]
    report = bench_rig.rigctl("bench", "report", str(run_dir))
    assert report.returncode == 0
    assert f"verdict: CUT SHORT: cut short: rigctl pid {pid} died during arm 2 of 3" in report.stdout
    assert "FAILED:" not in report.stdout
    assert last_good(bench_rig) == "seqs2"  # never the candidate
    bench_rig.check_invariants()  # the candidate's server is recorded: status sees it, stop could stop it

    notes: list[str] = []
    _tui_notifications(bench_rig, notes)
    assert any(said in note for note in notes), notes

    restored = bench_rig.rigctl("bench", "--restore")
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert bench_rig.status()["active_profile"] == "seqs2" and live(bench_rig) is None
    listed = bench_rig.rigctl("bench", "list", "--json")
    row = json.loads(listed.stdout)[-1]
    assert row["verdict"].startswith(f"cut short: rigctl pid {pid} died during arm 2"), row
    bench_rig.check_invariants()


def _tui_notifications(rig: Rig, into: list[str]) -> None:
    """The TUI's notifications as it opens on this rig, read from its message stream."""
    from textual.notifications import Notify

    from rigctl.backends import open_backend
    from rigctl.gpu.sampler import RigSampler
    from rigctl.tui.app import RigApp

    saved = {k: os.environ.get(k) for k in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "RIGCTL_SIM")}
    os.environ.update({k: rig.env[k] for k in saved})
    try:

        async def scenario() -> None:
            app = RigApp(RigSampler(open_backend("2x3090-nvlink"), with_host=False), poll_interval=None)

            def hook(message: object) -> None:
                if isinstance(message, Notify):
                    into.append(str(message.notification.message))

            async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
                for _ in range(40):
                    if into:
                        return
                    await pilot.pause(0.05)

        asyncio.run(scenario())
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_a_switch_after_a_cut_short_bench_says_it_and_settles_it(bench_rig: BenchRig) -> None:
    killed_mid_arm(bench_rig, "settled")
    switched = bench_rig.rigctl("switch", "alt")
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert "note: a bench (settled) was cut short" in switched.stderr
    assert live(bench_rig) is None and "cut short" not in bench_rig.rigctl("status").stdout
    assert last_good(bench_rig) == "alt"


@pytest.fixture
def ns(bench_rig: BenchRig) -> Iterator[MountNamespace]:
    with private_mounts(bench_rig) as space:
        yield space


def test_the_raw_dirs_disk_filling_mid_arm_is_one_line_and_restore_puts_the_control_back(
    bench_rig: BenchRig, ns: MountNamespace
) -> None:
    bench_rig.state_dir.mkdir(parents=True, exist_ok=True)
    done = ns.run("mount", "-t", "tmpfs", "-o", "size=40m,mode=0700", "tmpfs", str(bench_rig.state_dir))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    plan = bench_rig.plan("full", text=LONGER)
    proc = bench_rig.popen("bench", str(plan), "--json")

    def measuring_in_ns() -> bool:
        seen = ns.run("cat", str(bench_rig.state_dir / "bench" / "live.json"))
        try:
            mark = json.loads(seen.stdout)
        except ValueError:
            return False
        return bool(mark["progress"]["number"] == 2 and mark["progress"]["phase"] == "measuring")

    wait_until("arm 2 measuring", measuring_in_ns, proc)
    assert ns.run("sh", "-c", f"dd if=/dev/zero of={bench_rig.state_dir}/filler bs=64K 2>/dev/null; true").returncode == 0
    code, out = Rig.finish(proc, timeout=240)
    data = json.loads(out[out.index("{") :])
    assert code == 1 and data["status"] == "failed", out
    message = data["message"]
    assert message.startswith("arm 2 of 3 broke off: ") and "No space left on device" in message, message
    assert "the control seqs2 could not be put back" in message and "seqs8 keeps serving" in message, message
    assert data["serving"] == "seqs8" and bench_rig.status()["active_profile"] == "seqs8"
    assert last_good(bench_rig) == "seqs2"
    assert ns.run("rm", "-f", f"{bench_rig.state_dir}/filler").returncode == 0
    restored = bench_rig.rigctl("bench", "--restore")
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert bench_rig.status()["active_profile"] == "seqs2"
    bench_rig.check_invariants()


def test_sigterm_stops_a_bench_as_ctrl_c_does_and_the_control_serves(bench_rig: BenchRig) -> None:
    """systemd or a kill stopping a bench mid-arm: the run ends, the control is put back, no traceback."""
    plan = bench_rig.plan("term", text=LONGER)
    proc = bench_rig.popen("bench", str(plan), "--json")
    wait_until("arm 2 measuring", measuring(bench_rig, 2), proc)
    proc.send_signal(signal.SIGTERM)
    code, out = Rig.finish(proc, timeout=240)
    assert "Traceback" not in out, out
    data = json.loads(out[out.index("{") :])
    assert code == 1 and data["serving"] == "seqs2", out
    assert bench_rig.status()["active_profile"] == "seqs2"
    bench_rig.check_invariants()
