"""The front door on the real engine, with the apps' real client (the openai SDK): streamed chat,
chat with tools and streamed chat with tools through `rigctl gateway`; then a switch while three
long streams and a short prober run (no error for the prober, the streams complete, the record
says so), and a switch that fails verification (the held requests answered by the restored
profile)."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator

import openai
import pytest
from openai.types.chat import ChatCompletionToolParam

from tests.real_vllm.conftest import DoorRealRig, RealRig
from tests.support.serving import while_probed

TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "the weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


@pytest.fixture(scope="module")
def door_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoorRealRig]:
    rig = DoorRealRig(tmp_path_factory.mktemp("real-door") / "home")
    # one sequence at a time: the three long streams run one after another, so they span the switch
    rig.add_tiny("tools", enable_auto_tool_choice=True, tool_call_parser="hermes", max_num_seqs=1)
    # the tiny model's whole 32,768 positions: a stream long enough that no switch can start after it ended
    rig.add_tiny("tools-b", enable_auto_tool_choice=True, tool_call_parser="hermes", max_num_seqs=8, max_model_len=32768)
    rig.serve_behind_the_door("tools")
    yield rig
    rig.cleanup()


def client(rig: RealRig) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://127.0.0.1:{rig.port}/v1", api_key="unused", max_retries=0, timeout=300)


def test_the_apps_client_talks_through_the_door(door_rig: DoorRealRig) -> None:
    apps = client(door_rig)
    assert door_rig.record()["port"] != door_rig.port  # vLLM behind the door
    chunks = list(
        apps.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=8, stream=True)
    )
    assert chunks and chunks[-1].choices[0].finish_reason in ("length", "stop")
    answer = apps.chat.completions.create(
        model="tiny",
        messages=[{"role": "user", "content": "weather in Paris?"}],
        tools=TOOLS,
        max_tokens=8,
    )
    assert answer.choices[0].finish_reason in ("length", "stop", "tool_calls")
    streamed = list(
        apps.chat.completions.create(
            model="tiny",
            messages=[{"role": "user", "content": "weather in Paris?"}],
            tools=TOOLS,
            max_tokens=8,
            stream=True,
        )
    )
    assert streamed and streamed[-1].choices[0].finish_reason in ("length", "stop", "tool_calls")


class Stream(threading.Thread):
    def __init__(self, rig: RealRig, tokens: int, logprobs: int | None = None) -> None:
        super().__init__(daemon=True)
        self.rig, self.tokens, self.logprobs = rig, tokens, logprobs
        self.started = threading.Event()
        self.got = 0
        self.finish: str | None = None
        self.error = ""

    def run(self) -> None:
        try:
            for chunk in client(self.rig).completions.create(
                model="tiny",
                prompt="once upon a time",
                max_tokens=self.tokens,
                stream=True,
                logprobs=self.logprobs,
                extra_body={"ignore_eos": True},
            ):
                self.got += 1
                self.started.set()
                self.finish = chunk.choices[0].finish_reason or self.finish
        except openai.OpenAIError as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        self.started.set()


class Prober(threading.Thread):
    def __init__(self, rig: RealRig) -> None:
        super().__init__(daemon=True)
        self.rig = rig
        self.stop = threading.Event()
        self.answered = 0
        self.errors: list[str] = []

    def answers(self) -> int:
        return self.answered

    def run(self) -> None:
        apps = client(self.rig)
        while not self.stop.is_set():
            try:
                apps.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "ping"}], max_tokens=2)
                self.answered += 1
            except openai.OpenAIError as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.stop.wait(0.5)


def last_ending(rig: RealRig) -> dict[str, object]:
    ending: dict[str, object] = json.loads(rig.rigctl("history", "--switches", "--json").stdout)[-1]
    return ending


def test_a_switch_under_live_traffic_on_the_real_engine(door_rig: DoorRealRig) -> None:
    streams = [Stream(door_rig, 1900) for _ in range(3)]
    for stream in streams:
        stream.start()
    assert all(s.started.wait(120) for s in streams)
    prober = Prober(door_rig)
    switched = while_probed(prober, lambda: door_rig.rigctl("switch", "tools-b", timeout=600))
    for stream in streams:
        stream.join(300)
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert prober.errors == [], prober.errors
    assert all(s.finish == "length" and not s.error for s in streams), [(s.finish, s.got, s.error) for s in streams]
    assert "0 cut" in switched.stdout, switched.stdout
    ending = last_ending(door_rig)
    finished = ending["finished"]
    # what the door saw finish is what the switch said and what the journal keeps (on the tiny
    # model the streams may all have ended before the hold began: the simulator's test holds
    # streams that span the drain)
    assert ending["cut"] == 0 and isinstance(finished, int), ending
    assert f"{finished} in flight finished, 0 cut" in switched.stdout, switched.stdout
    assert door_rig.status()["active_profile"] == "tools-b"


def test_a_switch_that_fails_verification_answers_the_held_from_the_restored_profile(door_rig: DoorRealRig) -> None:
    door_rig.add_tiny("plain")
    config = (door_rig.config_dir / "config.toml").read_text()
    (door_rig.config_dir / "config.toml").write_text(config + "[verify]\ntools = true\n")
    prober = Prober(door_rig)
    try:
        failed = while_probed(prober, lambda: door_rig.rigctl("switch", "plain", "--force", timeout=600))
    finally:
        (door_rig.config_dir / "config.toml").write_text(config)
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert "rolled back: tools-b serves again" in failed.stderr, failed.stderr
    assert prober.errors == [], prober.errors
    assert prober.answered >= 1
    assert last_ending(door_rig)["status"] == "rolled_back"


def test_a_stream_the_switch_cuts_tells_the_apps_client_why(door_rig: DoorRealRig) -> None:
    """vLLM's own stream, cut at the drain's deadline: the openai SDK raises the door's reason (an
    SSE error event in vLLM's shape), never a bare connection error."""
    if door_rig.status()["active_profile"] != "tools-b":
        assert door_rig.rigctl("switch", "tools-b", timeout=600).returncode == 0
    # 30,000 tokens, each with its 20 most likely (vLLM's most): the stream must outlast the
    # switch's preflight, and 30,000 plain tokens once ended before it on an idle machine (as 1,900
    # had before them); the logprobs slow each token, never the switch
    stream = Stream(door_rig, 30_000, logprobs=20)
    stream.start()
    assert stream.started.wait(120)
    switched = door_rig.rigctl("switch", "tools", "--drain", "1", timeout=600)
    stream.join(120)
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert stream.error.startswith("APIError") and "cut by the switch to tools: the drain's 1 s deadline passed" in stream.error, (
        stream.error,
        stream.got,
    )


def test_the_door_killed_is_brought_back_by_watch_while_the_apps_run(door_rig: DoorRealRig) -> None:
    """The door SIGKILLed with vLLM behind it: `status --check` says so, `rigctl watch` starts it
    again, and an app whose client retries connection errors (as the openai SDK does by default)
    never sees one."""
    watch = door_rig.popen("watch", "--interval", "1")
    apps = openai.OpenAI(base_url=f"http://127.0.0.1:{door_rig.port}/v1", api_key="unused", max_retries=5, timeout=300)
    errors: list[str] = []
    answered = [0]
    stop = threading.Event()

    def app() -> None:
        while not stop.is_set():
            try:
                apps.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "ping"}], max_tokens=2)
                answered[0] += 1
            except openai.OpenAIError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
            stop.wait(0.3)

    prober = threading.Thread(target=app, daemon=True)
    try:
        door_rig.wait_for(watch, "watching")
        prober.start()
        assert door_rig.door is not None
        door_rig.door.kill()
        door_rig.door.wait(30)
        door_rig.door = None
        said = door_rig.wait_for(watch, "front door back", timeout=120)
        assert any("front door down" in line for line in said), said
        before = answered[0]
        deadline = threading.Event()
        while answered[0] <= before + 2 and not deadline.wait(0.2):
            pass
        stop.set()
        prober.join(120)
        assert errors == [], errors
        assert door_rig.status()["front_door"]["up"] is True
        assert door_rig.rigctl("status", "--check", "--window", "0.5").returncode == 0
    finally:
        stop.set()
        watch.terminate()
        door_rig.finish(watch)
        door = door_rig.read_json(door_rig.state_dir / "gateway.json")
        if door and door["pid"]:  # the door watch started, in a session of its own: the module's cleanup cannot see it
            subprocess.run(["kill", str(door["pid"])], check=False)
