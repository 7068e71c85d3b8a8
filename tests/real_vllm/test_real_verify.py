"""A switch is done when the owner's apps work, against the real engine (vLLM's CPU build, the tiny
model with its ChatML template): the chat and tool-call checks answered by vLLM itself, a profile
without tool calling refused before the stop, forced and rolled back by vLLM's own words, the
owner's requests answered and refused as the owner said they would be. In order, on one rig."""

from __future__ import annotations

import json

from tests.real_vllm.conftest import RealRig


def _verify_config(real: RealRig, extra: str = "") -> None:
    config = (real.config_dir / "config.toml").read_text().split("[verify]")[0]
    real.write_config(config + "[verify]\ntools = true\n" + extra)


def test_the_tiny_model_with_tool_calling_is_verified_by_the_engine(real: RealRig) -> None:
    real.add_tiny("tools", enable_auto_tool_choice=True, tool_call_parser="hermes")
    _verify_config(real)
    done = real.rigctl("switch", "tools", timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verified: chat, tools" in done.stdout
    record = json.loads(real.rigctl("history", "--json").stdout)[-1]
    checks = {c["name"]: c for c in record["verification"]["checks"]}
    assert checks["chat"]["ok"] and not checks["chat"]["skipped"]  # the ChatML template answered
    assert checks["tools"]["ok"] and record["verification"]["prompt_tokens"] > 0  # usage, counted by vLLM


def test_a_profile_without_tool_calling_is_refused_before_the_stop(real: RealRig) -> None:
    real.add_tiny("plain")
    pid = real.record()["pid"]
    refused = real.rigctl("switch", "plain", timeout=120)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "plain has no tool calling (--enable-auto-tool-choice and --tool-call-parser missing)" in refused.stderr
    assert refused.stderr.strip().endswith("tools keeps serving")
    assert real.record()["pid"] == pid


def test_forced_it_is_rolled_back_by_the_engines_own_refusal(real: RealRig) -> None:
    forced = real.rigctl("switch", "plain", "--force", timeout=800)
    assert forced.returncode == 3, forced.stdout + forced.stderr
    last = forced.stderr.strip().splitlines()[-1]
    assert last.startswith(
        'plain failed: the new profile refuses tool calls: vLLM said: "auto" tool choice requires '
        "--enable-auto-tool-choice and --tool-call-parser to be set"
    ), last
    assert last.endswith("rolled back: tools serves again")
    assert real.status()["active_profile"] == "tools"
    real.check_invariants()


def test_the_owners_requests_are_answered_and_refused_as_the_owner_expects(real: RealRig) -> None:
    requests = real.config_dir / "verify.jsonl"
    requests.write_text(
        '{"endpoint": "/v1/chat/completions", "body": {"messages": [{"role": "user", "content": "def f():"}], '
        '"max_tokens": 4}, "status": 200}\n'
        "# a prompt past max_model_len: the engine refuses it, as it must\n"
        '{"endpoint": "/v1/completions", "body": {"prompt": "x", "max_tokens": 4096}, "status": 400}\n'
    )
    _verify_config(real, 'requests = "verify.jsonl"\n')
    real.add_tiny("tools-again", enable_auto_tool_choice=True, tool_call_parser="hermes", max_num_seqs=4)
    done = real.rigctl("switch", "tools-again", timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(real.rigctl("history", "--json").stdout)[-1]
    answered = [c["detail"] for c in record["verification"]["checks"] if c["name"] == "request"]
    assert answered == [
        f"{requests}:1: POST /v1/chat/completions answered 200",
        f"{requests}:3: POST /v1/completions answered 400",
    ], answered


def test_a_known_answer_and_a_streamed_tool_call_are_checked_by_the_engine(real: RealRig) -> None:
    """The tiny model's greedy answer, asked now, is the known answer: a boot that gives it passes
    with a streamed forced tool call; one held to another answer is rolled back, quoting both."""
    import httpx

    prompt = "The capital of France is"
    asked = {"model": "tiny", "prompt": prompt, "max_tokens": 6, "temperature": 0, "seed": 0}
    greedy = httpx.post(f"http://127.0.0.1:{real.port}/v1/completions", json=asked, timeout=120).json()["choices"][0]["text"]
    known = real.config_dir / "known.jsonl"
    known.write_text(json.dumps({"prompt": prompt, "expect": greedy, "max_tokens": 6}) + "\n")
    _verify_config(real, 'answers = "known.jsonl"\ntools_streamed = true\n')
    real.add_tiny("answers", enable_auto_tool_choice=True, tool_call_parser="hermes", max_num_seqs=3)
    done = real.rigctl("switch", "answers", timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verified: chat, tools, answer, tools_streamed" in done.stdout, done.stdout
    wrong = "Berlin, of course"
    known.write_text(json.dumps({"prompt": prompt, "expect": wrong, "max_tokens": 6}) + "\n")
    real.add_tiny("answers-again", enable_auto_tool_choice=True, tool_call_parser="hermes", max_num_seqs=5)
    failed = real.rigctl("switch", "answers-again", timeout=800)
    assert failed.returncode == 3, failed.stdout + failed.stderr
    said = f"answers-again failed: {known}:1: the new profile answered {greedy.strip()!r}, which is not the known answer {wrong!r}"
    assert said in failed.stderr, failed.stderr
    assert real.status()["active_profile"] == "answers"
