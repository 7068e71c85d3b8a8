"""The bench on the owner's workload, through the real CLI on the simulated rig: a trace captured by
`rigctl capture` replayed by every arm, several candidates in one run, the owner's quality
command, too few requests, and an A/A run on a rig whose boots differ (never promoted)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rigctl.record.reader import RecordReader
from rigctl.record.rows import Row
from tests.support.bench_rig import SEQS_PLAN, BenchRig
from tests.support.capture_run import Capture
from tests.support.waiting import wait_until

pytestmark = pytest.mark.slow  # whole benches, a minute each: `pytest -m slow`, CI's own step

TRACE_PLAN = """description = "the owner's captured traffic, seqs2 -> seqs8"
control = "seqs2"
candidate = "seqs8"
[workload]
trace = "{trace}"
arrival = "recorded"
speed = 2.0
concurrency = 8
warmup_requests = 2
[gate]
metric = "output_tok_per_s"
min_change = 0.25
"""


@pytest.fixture
def bench_rig(tmp_path: Path) -> Iterator[BenchRig]:
    rig = BenchRig(tmp_path)
    yield rig
    rig.cleanup()  # the bench leaves its control serving: never a simulator outliving its test


def capture_traffic(rig: BenchRig, out: Path, count: int) -> list[dict[str, Any]]:
    """The apps' requests through rigctl capture in front of the served control: chat (some with
    tools, some streamed) and completions, a few tenths of a second apart."""
    assert rig.rigctl("start", "seqs2").returncode == 0
    upstream = f"http://127.0.0.1:{rig.port}"
    capture = Capture(upstream, out, env=rig.env)
    sent = []
    with httpx.Client(base_url=capture.url, timeout=60, trust_env=False) as client:
        for n in range(count):
            if n % 3:
                body: dict[str, Any] = {
                    "model": "qwen3.6-27b",
                    "max_tokens": 24 + n,
                    "messages": [{"role": "user", "content": f"question {n} " * (10 + n)}],
                }
                if n % 3 == 2:
                    body.update(stream=True, stream_options={"include_usage": True})
                answer = client.post("/v1/chat/completions", json=body)
            else:
                body = {"model": "qwen3.6-27b", "prompt": f"complete {n} " * (20 + n), "max_tokens": 16 + n}
                answer = client.post("/v1/completions", json=body)
            assert answer.status_code == 200
            sent.append(body)
            time.sleep(0.15 if n % 4 else 0.6)  # an uneven day, compressed
    rc, said = capture.stop()
    assert rc == 0, said
    assert rig.rigctl("stop").returncode == 0
    return sent


def test_a_captured_trace_is_what_every_arm_sends_with_its_gaps(bench_rig: BenchRig, tmp_path: Path) -> None:
    trace = tmp_path / "day.jsonl"
    sent = capture_traffic(bench_rig, trace, 24)
    recorded = [json.loads(line) for line in trace.read_text().splitlines()[1:]]
    recorded.sort(key=lambda e: e["t"])
    assert [e["body"] for e in recorded] == sent
    plan = bench_rig.plan("trace", text=TRACE_PLAN.format(trace=trace))
    done, data = bench_rig.bench(str(plan))
    assert done.returncode in (0, 5, 6), done.stderr + done.stdout
    raw = Path(data["raw_dir"])
    assert [json.loads(line)["body"] for line in (raw / "workload.jsonl").read_text().splitlines()] == sent
    for arm in data["arms"]:
        requests = [
            json.loads(line) for line in (raw / f"arm-{arm['number']}-{arm['role']}.requests.jsonl").read_text().splitlines()
        ]
        assert sorted(r["index"] for r in requests) == list(range(24)) and all(r["success"] for r in requests)
        by_index = {r["index"]: r for r in requests}
        # the same requests: the engine counted the same prompt, and the recorded output lengths
        assert [by_index[i]["prompt_len"] for i in range(24)] == [e["prompt_tokens"] for e in recorded]
        assert [by_index[i]["output_tokens"] for i in range(24)] == [e["completion_tokens"] for e in recorded]
        assert arm["prompt_tokens"] == sum(e["prompt_tokens"] for e in recorded)
        # recorded arrivals at speed 2: each request went out no sooner than its gap allows
        starts = [by_index[i]["start_time"] for i in range(24)]
        for i in range(1, 24):
            assert starts[i] - starts[0] >= (recorded[i]["t"] - recorded[0]["t"]) / 2.0 - 0.01


def test_one_control_and_two_candidates_are_five_arms_and_a_verdict_each(bench_rig: BenchRig) -> None:
    bench_rig.add_profile("seqs4", "max_num_seqs = 4\n")
    text = SEQS_PLAN.format(control="seqs2", candidate="seqs8", metric="output_tok_per_s").replace(
        'candidate = "seqs8"', 'candidates = ["seqs8", "seqs4"]'
    )
    done, data = bench_rig.bench(str(bench_rig.plan("two", text=text)))
    assert done.returncode in (0, 5, 6), done.stderr + done.stdout
    assert [(a["role"], a["profile"]) for a in data["arms"]] == [
        ("control", "seqs2"),
        ("candidate", "seqs8"),
        ("control", "seqs2"),
        ("candidate", "seqs4"),
        ("control", "seqs2"),
    ]
    assert [c["profile"] for c in data["candidates"]] == ["seqs8", "seqs4"]
    for candidate in data["candidates"]:
        assert candidate["verdict"] in ("promote", "reject", "inconclusive") and candidate["reasons"]
        assert candidate["change"] == [
            {"what": "--max-num-seqs", "control": "2", "candidate": candidate["profile"].removeprefix("seqs")}
        ]
    assert data["candidates"][0]["verdict"] == "promote"  # 2 -> 8 at 8 concurrent: the 40% the gate wants
    table = bench_rig.rigctl("bench", "report", data["raw_dir"]).stdout
    header = next(line for line in table.splitlines() if "seqs8" in line and "seqs4" in line)
    assert header.index("seqs2") < header.index("seqs8") < header.index("seqs4")  # a column per build


QUALITY = """
import os, sys
assert os.environ["RIGCTL_BASE_URL"].startswith("http://127.0.0.1:") and os.environ["RIGCTL_MODEL"]
print("checking")
if os.environ.get("FAIL_ON") == os.environ["RIGCTL_PROFILE"]:
    print("the eval could not reach its judge", file=sys.stderr)
    sys.exit(3)
print("Quality 109/120")
"""


def test_the_owners_quality_command_is_a_column_and_its_failure_the_arms(bench_rig: BenchRig, tmp_path: Path) -> None:
    script = bench_rig.plans / "eval.py"
    script.write_text(QUALITY)
    text = SEQS_PLAN.format(control="seqs2", candidate="seqs8", metric="output_tok_per_s") + (
        f'[quality]\ncommand = ["{sys.executable}", "eval.py"]\ntimeout_s = 60\n'
    )
    plan = bench_rig.plan("quality", text=text)
    done, data = bench_rig.bench(str(plan))
    assert done.returncode == 0, done.stderr + done.stdout
    assert [a["quality"]["score"] for a in data["arms"]] == ["Quality 109/120"] * 3
    assert [a["quality_score"] for a in data["arms"]] == [109.0] * 3
    raw = Path(data["raw_dir"])
    assert json.loads((raw / "arm-2-candidate.json").read_text())["quality"]["score"] == "Quality 109/120"
    table = bench_rig.rigctl("bench", "report", data["raw_dir"]).stdout
    assert any(line.startswith("quality") and "Quality 109/120" in line for line in table.splitlines())

    # the candidate's server fails the check: that arm failed, in one line, and nothing is promoted
    done, data = bench_rig.bench(str(plan), env={"FAIL_ON": "seqs8"})
    assert done.returncode != 0 and data["verdict"] != "promote"
    assert any("the quality command exited 3: the eval could not reach its judge" in r for r in data["reasons"])


def test_a_plan_with_too_few_requests_is_marked_and_not_promoted_and_the_record_keeps_it_apart(bench_rig: BenchRig) -> None:
    text = SEQS_PLAN.format(control="seqs2", candidate="seqs8", metric="output_tok_per_s").replace("requests = 32", "requests = 8")
    assert bench_rig.rigctl("start", "seqs8").returncode == 0
    recorder = bench_rig.popen("record", "--interval", "0.5")
    bench_rig.wait_for(recorder, "recording to")
    with httpx.Client(base_url=f"http://127.0.0.1:{bench_rig.port}", timeout=60, trust_env=False) as client:
        for n in range(3):  # real use before the bench
            client.post("/v1/completions", json={"model": "qwen3.6-27b", "prompt": f"mine {n}", "max_tokens": 4})
    db = bench_rig.state_dir / "record.sqlite"

    def recorded() -> list[Row]:
        return RecordReader(db).rows() if db.exists() else []

    # the owner's 3 requests in the record before the bench (a loaded machine writes rows late)
    wait_until("the owner's requests recorded", lambda: sum(r.requests for r in recorded()) >= 3, recorder)
    done, data = bench_rig.bench(str(bench_rig.plan("few", text=text)))
    ended = time.time()
    assert done.returncode == 6 and data["verdict"] == "inconclusive", done.stdout
    assert any("rests on 8 request(s), fewer than min_requests 20" in r for r in data["reasons"]), data["reasons"]
    # a row after the bench: the recorder has written the interval its last arm ended in
    wait_until("a row after the bench", lambda: any(r.ts > ended for r in recorded()), recorder)
    recorder.send_signal(2)
    Rig = type(bench_rig)
    Rig.finish(recorder)

    real = json.loads(bench_rig.rigctl("report", "--json").stdout)
    assert real["benches_left_out"] == ["few"]
    real_requests = sum(p["requests"] or 0 for p in real["profiles"])
    by_boot = bench_rig.rigctl("report", "--by-boot", "--json").stdout
    assert 3 <= real_requests < 8, by_boot  # the owner's 3, none of the bench's 3 x (8 + warm-up)
    benched = json.loads(bench_rig.rigctl("report", "--bench", "--json").stdout)
    by_profile = {p["profile"]: p for p in benched["profiles"]}
    assert set(by_profile) == {"seqs2", "seqs8"} and by_profile["seqs2"]["requests"] >= 16


@pytest.mark.parametrize("seed", ["1", "7"])
def test_an_aa_run_on_a_rig_whose_boots_differ_is_never_promoted(bench_rig: BenchRig, seed: str) -> None:
    text = SEQS_PLAN.format(control="seqs8", candidate="seqs8", metric="output_tok_per_s").replace(
        'order = "ABA"', 'order = "ABABA"'
    )
    done, data = bench_rig.bench(
        str(bench_rig.plan("aa", text=text)), env={"RIGCTL_SIM_NOISE": "0.3", "RIGCTL_SIM_NOISE_SEED": seed}
    )
    assert done.returncode in (5, 6) and data["verdict"] != "promote", done.stdout
    assert any("A/A run" in w for w in data["warnings"])


def test_calibrate_measures_the_rigs_noise_and_the_next_bench_is_judged_by_it(bench_rig: BenchRig) -> None:
    plan = bench_rig.plan("cal")
    noisy = {"RIGCTL_SIM_NOISE": "0.3", "RIGCTL_SIM_NOISE_SEED": "5"}
    done = bench_rig.rigctl("bench", "calibrate", str(plan), "--runs", "3", "--json", timeout=240, env=noisy)
    assert done.returncode == 0, done.stderr + done.stdout
    data = json.loads(done.stdout)
    values = data["values"]["output_tok_per_s"]
    assert len(values) == 3 and data["noise"]["runs"] == 3 and data["noise"]["profile"] == "seqs2"
    assert data["noise"]["spread"]["output_tok_per_s"] == pytest.approx((max(values) - min(values)) / (sum(values) / 3))
    assert bench_rig.status()["active_profile"] == "seqs2"
    kept = json.loads((bench_rig.state_dir / "bench" / "noise.json").read_text())
    assert [v["profile"] for v in kept.values()] == ["seqs2"]
    arms = json.loads((Path(data["raw_dir"]) / "run.json").read_text())["arms"]
    assert arms == [["control", "seqs2"]] * 3  # kept raw like any run

    _, verdict = bench_rig.bench(str(plan), env=noisy)
    spread = data["noise"]["spread"]["output_tok_per_s"]
    assert any(f"measured by rigctl bench calibrate: {spread * 100:.1f}% between fresh servers" in n for n in verdict["notes"]), (
        verdict["notes"]
    )
    if verdict["change"] is not None and abs(verdict["change"]) <= spread:
        assert verdict["verdict"] != "promote"
        assert any("cannot be told from it" in r for r in verdict["reasons"])


def test_calibrate_refuses_a_count_it_cannot_use(bench_rig: BenchRig) -> None:
    done = bench_rig.rigctl("bench", "calibrate", str(bench_rig.plan("cal")), "--runs", "1")
    assert done.returncode == 2 and "--runs: must be a whole number of fresh boots from 3 to 12, not 1" in done.stderr
