"""The apps judge a switch on the real vLLM CPU build, through the front door, with the apps' real
client (the openai SDK, no retries): a profile that takes another key, serves another name, drops
the tool parser or shortens the context below what the app sends passes rigctl's verification;
vLLM refuses the app's first request (401, 404, 400, 400), the switch rolls back, and the app
never sees an error: its refused request is answered by the restored profile."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionToolParam

from tests.real_vllm.conftest import DoorRealRig, RealRig

KEY = "sk-the-apps-key"
TOOLS: list[ChatCompletionToolParam] = [
    {
        "type": "function",
        "function": {"name": "now", "description": "the time", "parameters": {"type": "object", "properties": {}}},
    }
]
APPS_PROFILE: dict[str, Any] = {"api_key": KEY, "enable_auto_tool_choice": True, "tool_call_parser": "hermes"}


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DoorRealRig]:
    rig = DoorRealRig(tmp_path_factory.mktemp("real-judge") / "home")
    rig.add_tiny("apps", **APPS_PROFILE)
    rig.serve_behind_the_door("apps")
    yield rig
    rig.cleanup()


def chat(client: openai.OpenAI) -> None:
    client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "ping"}], max_tokens=2)


def tool_chat(client: openai.OpenAI) -> None:
    client.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": "time?"}], tools=TOOLS, tool_choice="auto", max_tokens=2
    )


def long_completion(client: openai.OpenAI) -> None:
    client.completions.create(model="tiny", prompt="word " * 900, max_tokens=2)


class App(threading.Thread):
    def __init__(self, rig: RealRig, request: Callable[[openai.OpenAI], None]) -> None:
        super().__init__(daemon=True)
        self.rig, self.request = rig, request
        self.stop = threading.Event()
        self.answered = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{self.rig.port}/v1", api_key=KEY, max_retries=0, timeout=300)
        while not self.stop.is_set():
            try:
                self.request(client)
                self.answered.set()
            except openai.OpenAIError as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.stop.wait(0.3)


@dataclass(frozen=True)
class Case:
    name: str
    vllm: dict[str, Any]
    request: Callable[[openai.OpenAI], None]
    status: int


CASES = [
    Case("another-key", {**APPS_PROFILE, "api_key": "sk-a-new-key"}, chat, 401),
    Case("another-name", {**APPS_PROFILE, "served_model_name": "renamed"}, chat, 404),
    Case("no-tool-parser", {"api_key": KEY}, tool_chat, 400),
    Case("shorter-context", {**APPS_PROFILE, "max_model_len": 512}, long_completion, 400),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_profile_that_breaks_the_apps_is_rolled_back_by_their_requests(rig: DoorRealRig, case: Case) -> None:
    rig.add_tiny(case.name, **case.vllm)
    app = App(rig, case.request)
    app.start()
    try:
        assert app.answered.wait(120), app.errors
        switched = rig.rigctl("switch", case.name, timeout=600)
        app.answered.clear()
        assert app.answered.wait(120), app.errors  # the restored profile answers it again
    finally:
        app.stop.set()
        app.join(300)
    said = switched.stdout + switched.stderr
    assert switched.returncode == 3, said
    assert f"the apps' requests were refused ({case.status} for OpenAI/Python" in said, said
    assert app.errors == [], app.errors
    assert rig.status()["active_profile"] == "apps"
    ending: dict[str, Any] = json.loads(rig.rigctl("history", "--switches", "--json").stdout)[-1]
    assert ending["status"] == "rolled_back" and ending["apps_refused"], ending
