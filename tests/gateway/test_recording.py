"""The front door's recording and its prefix-reuse count, through the CLI on the simulated rig: an
agent whose conversation grows on one system prompt (its prompts repeat their beginning) beside
a client that puts a new date in its system prompt every time (nothing repeats); the recording a
bench replays by window; hostile bodies recorded without losing the count."""

from __future__ import annotations

import json
import re
import stat

import httpx

from tests.support.door_rig import DoorRig

GATE = '[gate]\nmetric = "ttft_p50_s"\nmin_change = 0.1\n'
SYSTEM = "You are a careful coding agent. " * 40


def chat(port: int, agent: str, messages: list[dict[str, str]], stream: bool = False) -> httpx.Response:
    body = {"model": "qwen3.6-27b", "messages": messages, "max_tokens": 4, "stream": stream}
    return httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, headers={"User-Agent": agent}, timeout=60)


def test_the_door_records_every_request_and_says_whose_prompts_keep_their_prefix(rig: DoorRig) -> None:
    rig.open_door("--record")
    assert rig.door is not None
    said = rig.wait_for(rig.door, "recording every forwarded")
    assert "gateway-traces (0600: it holds the apps' prompts)" in said[-1], said
    assert rig.rigctl("switch", "good").returncode == 0
    conversation = [{"role": "system", "content": SYSTEM}]
    for turn in range(6):
        conversation.append({"role": "user", "content": f"step {turn}: fix the next failing test"})
        answer = chat(rig.port, "agent/1.0", conversation, stream=turn % 2 == 1)
        assert answer.status_code == 200, answer.text
        conversation.append({"role": "assistant", "content": "done"})
        dated = [{"role": "system", "content": f"Today is 2026-12-0{turn + 1} 10:{turn:02d}. " + SYSTEM}]
        assert chat(rig.port, "perplexica/2", [*dated, {"role": "user", "content": "search"}]).status_code == 200
    nan = b'{"model": "qwen3.6-27b", "prompt": "x", "temperature": NaN, "max_tokens": 2}'
    odd = httpx.post(
        f"http://127.0.0.1:{rig.port}/v1/completions", content=nan, headers={"Content-Type": "application/json"}, timeout=60
    )
    assert odd.status_code in (200, 400), odd.text  # vLLM's own answer, as it was

    status = json.loads(rig.rigctl("gateway", "--status", "--json").stdout)
    reuse = status["reuse"]
    agent, search = reuse["agent/1.0"], reuse["perplexica/2"]
    assert agent["requests"] == 6 and search["requests"] == 6, reuse
    assert agent["reused_chars"] / agent["prompt_chars"] > 0.7, agent  # each turn repeats the last one's prompt
    assert search["reused_chars"] / search["prompt_chars"] < 0.05, search  # "Today is ..." comes first: nothing repeats
    assert status["recording"]["kept"] == 13 and not status["recording"]["stopped"], status["recording"]
    text = rig.rigctl("gateway", "--status").stdout
    shares = dict(re.findall(r"prefix reuse of (\S+): (\d+)% of its prompts' characters", text))
    assert int(shares["agent/1.0"]) > 70 and int(shares["perplexica/2"]) < 5, text

    folder = rig.state_dir / "gateway-traces"
    files = sorted(folder.glob("door-*.jsonl"))
    assert len(files) == 1 and stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(files[0].stat().st_mode) == 0o600
    lines = [json.loads(line) for line in files[0].read_text().splitlines()]
    assert lines[0]["rigctl_trace"] == 1 and len(lines) == 14, lines[0]
    requests = lines[1:]
    assert [r["client"] for r in requests[:2]] == ["agent/1.0", "perplexica/2"]
    streamed = [r for r in requests if r["stream"]]
    assert len(streamed) == 3 and all(r["status"] == 200 and (r.get("completion_tokens") or r.get("chunks")) for r in streamed)
    assert requests[-1]["body"] == {} and "not strict JSON" in requests[-1]["unkept"], requests[-1]
    assert "Authorization" not in files[0].read_text()

    plan = rig.home / "replay.toml"
    plan.write_text('control = "good"\ncandidate = "alt"\n[workload]\ntrace = "gateway"\nwindow = "1h"\nconcurrency = 2\n' + GATE)
    checked = rig.rigctl("bench", "check", str(plan), "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["requests"] == 12  # the twelve chats; the completion without a body is not replayed
    code, out = rig.close_door()
    assert code == 0, out


def test_a_window_of_nothing_and_a_window_without_the_recording_are_refused_in_one_line(rig: DoorRig) -> None:
    plan = rig.home / "replay.toml"
    plan.write_text('control = "good"\ncandidate = "alt"\n[workload]\ntrace = "gateway"\nwindow = "1h"\n' + GATE)
    nothing = rig.rigctl("bench", "check", str(plan))
    assert nothing.returncode != 0 and "nothing recorded yet" in nothing.stderr, nothing.stderr
    plan.write_text('control = "good"\ncandidate = "alt"\n[workload]\ntrace = "gateway"\nwindow = "yesterday"\n' + GATE)
    bad = rig.rigctl("bench", "check", str(plan))
    assert bad.returncode != 0 and "Traceback" not in bad.stderr, bad.stderr
    plan.write_text('control = "good"\ncandidate = "alt"\n[workload]\ntrace = "mine.jsonl"\nwindow = "1h"\n' + GATE)
    stray = rig.rigctl("bench", "check", str(plan))
    assert "window is a span of the front door's recording" in stray.stderr, stray.stderr
