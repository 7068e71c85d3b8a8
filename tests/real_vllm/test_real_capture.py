"""rigctl capture (the front door recording into one file) in front of the real vLLM CPU build, and
a bench replaying what it kept: the apps get what vLLM sent (the same bytes through a TCP tap,
event for event for streams), the trace holds what they sent and no header value; the replay
sends exactly those requests in every arm (the usage sums equal the engine's own counters), and
an A/A run on real fresh servers is never promoted."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.real_vllm.conftest import RealRig
from tests.support.capture_run import SECRET, TOOLS, App, Capture
from tests.support.tap import Tap


def counters(path: Path) -> dict[str, float]:
    return {
        family.name: sum(s.value for s in family.samples if s.name.endswith("_total"))
        for family in text_string_to_metric_families(path.read_text())
        if family.type == "counter"
    }


def test_capture_then_replay_on_the_real_engine(real: RealRig, tmp_path: Path) -> None:
    real.add_tiny("tiny-tools", enable_auto_tool_choice=True, tool_call_parser="hermes", max_num_seqs=4)
    started = real.rigctl("switch", "tiny-tools", timeout=400)
    assert started.returncode == 0, started.stdout + started.stderr
    tap = Tap(real.port)
    capture = Capture(tap.url, tmp_path / "day.jsonl", env=real.env)
    app = App(capture, tap)
    bodies = [
        {
            "model": "tiny",
            "messages": [{"role": "user", "content": "What is the weather in Oslo?"}],
            "tools": TOOLS,
            "tool_choice": "auto",
            "max_tokens": 16,
            "temperature": 0,
        },
        {
            "model": "tiny",
            "messages": [{"role": "user", "content": "Tell me a story."}],
            "max_tokens": 24,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": 0,
        },
        {
            "model": "tiny",
            "prompt": "Once upon a time",
            "max_tokens": 12,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": 0,
        },
        {"model": "tiny", "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0},
    ]
    for n in range(24):  # the apps' day: the four kinds of request, again and again
        body = json.loads(json.dumps(bodies[n % 4]))
        if "prompt" in body:
            body["prompt"] += f" ({n})"
        else:
            body["messages"][0]["content"] += f" ({n})"
        answer = app.post("/v1/chat/completions" if "messages" in body else "/v1/completions", body)
        assert answer.status_code == 200, answer.text
    app.close()
    rc, said = capture.stop()
    tap.close()
    assert rc == 0 and "24 request(s) recorded into" in said, said
    text = capture.out.read_text()
    assert SECRET not in text and "Bearer" not in text
    _, entries = capture.trace()
    assert [(e["endpoint"], e["body"]) for e in entries] == app.sent
    assert all(e["status"] == 200 and e["prompt_tokens"] > 0 and e["completion_tokens"] > 0 for e in entries)

    # the replay: an A/A run (the control is the candidate), every arm the trace's requests
    plan = real.config_dir / "plans" / "aa-trace.toml"
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text(f'''description = "A/A on the captured day"
control = "tiny-tools"
candidate = "tiny-tools"
[workload]
trace = "{capture.out}"
arrival = "recorded"
speed = 4.0
concurrency = 4
warmup_requests = 4
[gate]
metric = "output_tok_per_s"
min_change = 0.30
''')
    done = real.rigctl("bench", str(plan), "--json", timeout=900)
    data = json.loads(done.stdout)
    assert done.returncode in (5, 6) and data["verdict"] != "promote", done.stderr + done.stdout
    if data["verdict"] == "inconclusive":  # the A/A is named among the reasons, whatever else failed
        assert any("A/A run" in r for r in data["candidates"][0]["reasons"]), data["reasons"]
    raw = Path(data["raw_dir"])
    for arm in data["arms"]:
        stem = f"arm-{arm['number']}-{arm['role']}"
        requests = [json.loads(line) for line in (raw / f"{stem}.requests.jsonl").read_text().splitlines()]
        assert sorted(r["index"] for r in requests) == list(range(24)) and all(r["success"] for r in requests)
        by_index = {r["index"]: r for r in requests}
        # the same requests: vLLM counted the same prompt tokens as when they were captured
        assert [by_index[i]["prompt_len"] for i in range(24)] == [e["prompt_tokens"] for e in entries]
        before, after = (counters(raw / f"{stem}.metrics-{when}.prom") for when in ("before", "after"))
        assert sum(r["prompt_len"] for r in requests) == after["vllm:prompt_tokens"] - before["vllm:prompt_tokens"]
        assert sum(r["output_tokens"] for r in requests) == after["vllm:generation_tokens"] - before["vllm:generation_tokens"]
    assert real.status()["active_profile"] == "tiny-tools"
    real.rigctl("stop")
