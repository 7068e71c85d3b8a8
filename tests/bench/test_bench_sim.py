"""`rigctl bench` end to end: real rigctl processes switching real simulator servers (each arm
a fresh one), the load sent over HTTP, the verdict read back from what was printed and kept."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from textual.widgets import Static

from tests.faults.rig import Rig
from tests.support.bench_rig import BenchRig


@pytest.fixture
def bench_rig(tmp_path: Path) -> Iterator[BenchRig]:
    rig = BenchRig(tmp_path / "home")
    yield rig
    rig.cleanup()


@pytest.fixture(scope="module")
def promoted(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[BenchRig, subprocess.CompletedProcess[str], dict[str, Any]]]:
    rig = BenchRig(tmp_path_factory.mktemp("promoted") / "home")
    plan = rig.plan("seqs")
    done, data = rig.bench(str(plan), "--keep-candidate")
    yield rig, done, data
    rig.cleanup()


def test_more_sequences_at_eight_concurrent_are_promoted(promoted: Any) -> None:
    rig, done, data = promoted
    assert done.returncode == 0, done.stderr + done.stdout
    assert data["verdict"] == "promote" and data["status"] == "complete"
    assert [(a["role"], a["profile"]) for a in data["arms"]] == [("control", "seqs2"), ("candidate", "seqs8"), ("control", "seqs2")]
    assert all(a["cold_cache"] is True and a["requests"] == 32 and a["completed"] == 32 for a in data["arms"])
    controls = [a["output_tok_per_s"] for a in data["arms"] if a["role"] == "control"]
    candidate = data["arms"][1]["output_tok_per_s"]
    assert candidate > 1.5 * max(controls)  # 8 streams against 2
    assert data["change"] == pytest.approx((candidate - sum(controls) / 2) / (sum(controls) / 2))
    assert data["control_drift"] < 0.25 and data["gate"]["metric"] == "output_tok_per_s"
    for arm in data["arms"]:
        for name in (
            "ttft_p50_s",
            "ttft_p95_s",
            "tpot_p50_s",
            "decode_tok_per_s_stream",
            "kv_pool_tokens",
            "kv_pool_per_max_len",
            "prefix_hit_rate",
            "preemptions",
            "j_per_token",
        ):
            assert arm[name] is not None, (arm["number"], name)
        assert arm["prefix_hit_rate"] == 0.0  # no measured prompt shares a block with another or the warm-up
        assert arm["boot"]["kv_tokens"] == arm["kv_pool_tokens"] and arm["boot"]["profile"] == arm["profile"]
    assert [c["what"] for c in data["changes"]] == ["--max-num-seqs"]
    # --keep-candidate: the promoted profile serves on
    assert rig.status()["active_profile"] == "seqs8"


def test_without_a_terminal_each_phase_of_each_arm_is_a_line_with_the_runs_eta(promoted: Any) -> None:
    """A bench from cron or nohup (stderr a pipe, as here) says where it is: never minutes of
    nothing that reads as hung."""
    _, done, _ = promoted
    lines = done.stderr.splitlines()
    for arm, role, profile in ((1, "A", "seqs2"), (2, "B", "seqs8"), (3, "A", "seqs2")):
        for phase in ("switching", "measuring", "done"):
            assert any(line.startswith(f"arm {arm}/3 {role} {profile}: {phase}") for line in lines), (arm, phase, lines)
    assert any("run ETA" in line for line in lines if line.startswith("arm 1/3"))
    assert not any("\r" in line for line in lines)  # no terminal rewriting into a log file


def test_everything_is_kept_raw(promoted: Any) -> None:
    rig, _, data = promoted
    raw = Path(data["raw_dir"])
    assert raw.parent == rig.state_dir / "bench" and raw.name.endswith("-seqs")
    assert (raw / "plan.toml").read_text() == (rig.plans / "seqs.toml").read_text()
    assert json.loads((raw / "verdict.json").read_text()) == data
    for arm in data["arms"]:
        stem = raw / f"arm-{arm['number']}-{arm['role']}"
        requests = [json.loads(line) for line in Path(f"{stem}.requests.jsonl").read_text().splitlines()]
        assert sorted(r["index"] for r in requests) == list(range(32))
        assert all(
            r["success"] and r["usage_reported"] and r["output_tokens"] == 64 and r["ttft"] > 0 and len(r["itl"]) == r["chunks"] - 1
            for r in requests
        )
        assert json.loads(Path(f"{stem}.json").read_text())["output_tok_per_s"] == arm["output_tok_per_s"]
        for scrape in ("cold", "before", "after"):
            assert "vllm:prefix_cache_queries_total" in Path(f"{stem}.metrics-{scrape}.prom").read_text()
        assert Path(f"{stem}.samples.jsonl").read_text().count("\n") >= 2
    history = [json.loads(line) for line in (rig.state_dir / "history.jsonl").read_text().splitlines()]
    assert [h["profile"] for h in history[-4:]] == ["seqs2", "seqs8", "seqs2", "seqs8"]  # and the one kept


def test_a_kept_run_reports_again_from_its_raw_files(promoted: Any) -> None:
    rig, _, data = promoted
    again = rig.rigctl("bench", "report", data["raw_dir"], "--json")
    assert again.returncode == 0, again.stderr
    redone = json.loads(again.stdout)
    assert redone["verdict"] == data["verdict"] and redone["change"] == pytest.approx(data["change"])
    for live, kept in zip(data["arms"], redone["arms"], strict=True):
        for name in ("output_tok_per_s", "ttft_p95_s", "tpot_p50_s", "prefix_hit_rate", "j_per_token"):
            assert kept[name] == pytest.approx(live[name]), name
    text = rig.rigctl("bench", "report", Path(data["raw_dir"]).name)
    assert "verdict: PROMOTE: output_tok_per_s +" in text.stdout and "out tok/s ◀ gate" in text.stdout
    listed = rig.rigctl("bench", "list")
    assert Path(data["raw_dir"]).name in listed.stdout and "seqs2 -> seqs8" in listed.stdout
    assert "promote" in listed.stdout


def test_the_tui_bench_screen_shows_kept_runs(promoted: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from textual.coordinate import Coordinate
    from textual.widgets import DataTable

    from rigctl.backends import open_backend
    from rigctl.gpu.sampler import RigSampler
    from rigctl.tui.app import RigApp

    rig, _, data = promoted
    for key in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "RIGCTL_SIM"):
        monkeypatch.setenv(key, rig.env[key])

    async def scenario() -> str:
        app = RigApp(RigSampler(open_backend("2x3090-nvlink"), with_host=False), poll_interval=None)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("B")
            table = app.screen.query_one(DataTable)
            for _ in range(100):
                await pilot.pause(0.05)
                if table.row_count:
                    break
            assert table.row_count == 1 and table.get_row_at(0)[0] == data["verdict"]  # the verdict first
            assert table.coordinate_to_cell_key(Coordinate(0, 0)).row_key.value == Path(data["raw_dir"]).name
            await pilot.press("enter")
            for _ in range(100):
                await pilot.pause(0.05)
                text = str(app.screen.query_one("#bench-report", Static).content)
                if "verdict:" in text:
                    return text
        return ""

    shown = asyncio.run(scenario())
    assert "verdict: PROMOTE" in shown
    assert "by arm (the gate):" in shown and "1 control" in shown and "2 candidate" in shown and "3 control" in shown


def test_a_candidate_that_is_its_control_is_not_promoted_and_holds_the_rig(bench_rig: BenchRig) -> None:
    plan = bench_rig.plan("aa", control="seqs2", candidate="seqs2")
    proc = bench_rig.popen("bench", str(plan), "--json")
    live = bench_rig.state_dir / "bench" / "live.json"
    deadline = time.monotonic() + 60
    while not live.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    refused = bench_rig.rigctl("switch", "alt")  # from another terminal, while the bench runs
    code, out = Rig.finish(proc)
    assert refused.returncode == 1 and "holds the switch lock" in refused.stderr and "bench aa" in refused.stderr
    data = json.loads(out[out.index("{") :])
    assert code in (5, 6) and data["verdict"] in ("reject", "inconclusive"), out
    assert any("A/A run" in w for w in data["warnings"])
    assert bench_rig.status()["active_profile"] == "seqs2" and not live.exists()


def test_mtp_at_low_acceptance_is_rejected_on_decode_speed(bench_rig: BenchRig) -> None:
    bench_rig.add_profile("mtp8", 'max_num_seqs = 8\nspeculative_config = { method = "mtp", num_speculative_tokens = 3 }\n')
    plan = bench_rig.plan("mtp", control="seqs8", candidate="mtp8", metric="decode_tok_per_s_stream")
    done, data = bench_rig.bench(str(plan), "--progress", env={"RIGCTL_SIM_ACCEPTANCE": "0.5"})
    assert done.returncode == 5, done.stderr + done.stdout
    assert data["verdict"] == "reject" and data["reason"].startswith("decode_tok_per_s_stream -")
    # --progress: JSON lines on stderr for scripts, every phase of every arm, the run's ETA in each
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    phases = [(p["number"], p["phase"]) for p in lines if "phase" in p]
    for arm in (1, 2, 3):
        assert {(arm, "switching"), (arm, "measuring"), (arm, "done")} <= set(phases), phases
    assert phases == sorted(phases, key=lambda p: p[0])  # in arm order
    assert all("run_eta_s" in p and p["arms"] == 3 for p in lines if "phase" in p)
    assert all(line.startswith("{") for line in done.stderr.splitlines() if line.strip()), done.stderr
    assert data["change"] < -0.05  # slower, not merely short of the gate
    candidate = data["arms"][1]
    assert candidate["spec_acceptance_rate"] is not None and candidate["spec_acceptance_rate"] < 0.35
    assert all(a["spec_acceptance_rate"] is None for a in data["arms"] if a["role"] == "control")
    assert bench_rig.status()["active_profile"] == "seqs8"  # the control serves again


def test_noisy_controls_make_it_inconclusive(bench_rig: BenchRig) -> None:
    plan = bench_rig.plan("noisy")
    # every boot falls into its own speed regime, +-30%: boots 1 and 3 (the controls) differ by ~40%
    done, data = bench_rig.bench(str(plan), env={"RIGCTL_SIM_NOISE": "0.3", "RIGCTL_SIM_NOISE_SEED": "3"})
    assert done.returncode == 6, done.stderr + done.stdout
    assert data["verdict"] == "inconclusive" and data["control_drift"] > 0.25
    assert "this rig is too noisy to tell" in data["reason"]


def test_a_warm_cache_is_detected_and_cannot_promote(bench_rig: BenchRig) -> None:
    plan = bench_rig.plan("warm")
    halt = threading.Event()

    def chatty_client() -> None:  # an agent left running, sending the same turn the moment a server answers
        with httpx.Client(timeout=5) as http:
            while not halt.is_set():
                try:
                    http.post(
                        f"http://127.0.0.1:{bench_rig.port}/v1/completions",
                        json={"prompt": "You are a helpful agent. " * 40, "max_tokens": 1},
                    )
                except httpx.HTTPError:
                    time.sleep(0.01)

    thread = threading.Thread(target=chatty_client, daemon=True)
    thread.start()
    try:
        done, data = bench_rig.bench(str(plan))
    finally:
        halt.set()
        thread.join(timeout=10)
    assert done.returncode == 6, done.stderr + done.stdout
    assert data["verdict"] == "inconclusive"
    warm = [a for a in data["arms"] if a["cold_cache"] is False]
    assert warm and all(a["cold_detail"].startswith("WARM: after the restart") for a in warm)
    assert f"arm {warm[0]['number']} ({warm[0]['profile']}) started on a warm prefix cache" in data["notes"]


def test_a_bad_plan_is_refused_before_anything_is_switched(bench_rig: BenchRig) -> None:
    assert bench_rig.rigctl("start", "good").returncode == 0
    pid = bench_rig.record()["pid"]
    plan = bench_rig.plan(
        "bad",
        text='control = "seqs2"\ncandidate = "seqs8"\n[workload]\nkind = "chat-short"\n'
        'concurency = 8\n[gate]\nmetric = "output_tok_per_s"\nmin_change = 0.05\n',
    )
    done, _ = bench_rig.bench("bad")
    assert done.returncode == 2
    assert f"{plan}:5: workload.concurency: unknown key; did you mean 'concurrency'?" in done.stderr
    missing = bench_rig.plan("missing", control="seqs2", candidate="nope")
    done, _ = bench_rig.bench(str(missing))
    assert done.returncode == 2 and f"{missing}: candidate 'nope':" in done.stderr
    assert bench_rig.record()["pid"] == pid and not (bench_rig.state_dir / "bench").exists()


def test_a_candidate_that_fails_to_boot_stops_the_run_and_the_control_serves(bench_rig: BenchRig) -> None:
    bench_rig.add_profile("async8", "max_num_seqs = 8\nasync_scheduling = true\n")
    plan = bench_rig.plan("fails", candidate="async8")
    # the vLLM on this box is one that never had --async-scheduling: the candidate dies at boot
    done, data = bench_rig.bench(str(plan), env={"RIGCTL_SIM_REJECT_FLAGS": "--async-scheduling"})
    assert done.returncode == 1, done.stderr + done.stdout
    assert data["status"] == "failed" and data["verdict"] is None
    assert data["message"].startswith("arm 2 (candidate async8): the switch failed:")
    assert [a["number"] for a in data["arms"]] == [1]  # the arm that finished is kept
    assert bench_rig.status()["active_profile"] == "seqs2" and data["serving"] == "seqs2"
    bench_rig.check_invariants()


def test_a_bench_puts_back_what_served_before_it(bench_rig: BenchRig) -> None:
    """Production serves (prod); the plan's control is a copy of it (seqs2): at the end prod serves
    again, not the copy, and the run says so; --keep-candidate is the only way to leave another."""
    bench_rig.add_profile("prod", "max_num_seqs = 4\n")
    assert bench_rig.rigctl("switch", "prod").returncode == 0
    plan = bench_rig.plan("copy", control="seqs2", candidate="seqs8")
    done, data = bench_rig.bench(str(plan))
    assert done.returncode in (0, 5, 6), done.stderr + done.stdout
    assert data["serving"] == "prod" and data["restored"] == "prod", data
    assert bench_rig.status()["active_profile"] == "prod"
    shown = bench_rig.rigctl("bench", "report", data["raw_dir"]).stdout
    assert "serving now: prod (it served before the bench: put back)" in shown, shown
    bench_rig.check_invariants()
