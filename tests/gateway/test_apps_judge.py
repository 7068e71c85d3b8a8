"""The apps judge a switch, through the real CLI on the simulated rig: a profile whose server takes
another key, serves another model name, has no tool parser or a shorter context than the apps use
passes rigctl's own verification; the apps' first requests through the door are refused by it, so
the switch rolls back, and the app never sees an error: its refused request is sent again to the
restored profile. The owner who means the change says so (--apps-may-change)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.door_rig import DoorRig

KEY = "sk-apps-old-key"


class App(threading.Thread):
    """An app's requests, one after another until `stop`, with its own key: what came back."""

    def __init__(self, port: int, request: Callable[[httpx.Client], httpx.Response]) -> None:
        super().__init__(daemon=True)
        self.port, self.request = port, request
        self.stop = threading.Event()
        self.answered = threading.Event()
        self.statuses: list[int] = []
        self.errors: list[str] = []

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{self.port}", headers=headers, timeout=120) as client:
            while not self.stop.is_set():
                try:
                    answer = self.request(client)
                except httpx.HTTPError as exc:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                else:
                    self.statuses.append(answer.status_code)
                    if answer.status_code == 200:
                        self.answered.set()
                    else:
                        self.errors.append(f"HTTP {answer.status_code}: {answer.text[:200]}")
                self.stop.wait(0.2)


def completion(client: httpx.Client) -> httpx.Response:
    return client.post("/v1/completions", json={"model": "qwen3.6-27b", "prompt": "hi", "max_tokens": 4})


def long_prompt(client: httpx.Client) -> httpx.Response:
    return client.post("/v1/completions", json={"model": "qwen3.6-27b", "prompt": "word " * 4000, "max_tokens": 4})


def tool_chat(client: httpx.Client) -> httpx.Response:
    tool = {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}
    body = {"model": "qwen3.6-27b", "messages": [{"role": "user", "content": "time?"}], "tools": [tool], "tool_choice": "auto"}
    return client.post("/v1/chat/completions", json={**body, "max_tokens": 4})


@dataclass(frozen=True)
class Case:
    name: str
    body: str  # the candidate profile's [vllm] lines (the rig's `good` is its parent's, with the apps' key)
    request: Callable[[httpx.Client], httpx.Response]
    status: int


CASES = [
    Case("another-key", 'api_key = "sk-apps-new-key"\n', completion, 401),
    Case("another-name", 'api_key = "sk-apps-old-key"\nserved_model_name = "qwen-renamed"\n', completion, 404),
    Case("no-tool-parser", 'api_key = "sk-apps-old-key"\nenable_auto_tool_choice = false\n', tool_chat, 400),
    Case("shorter-context", 'api_key = "sk-apps-old-key"\nmax_model_len = 2048\n', long_prompt, 400),
]


def serving_the_apps(rig: DoorRig, app: App) -> None:
    rig.add_profile("good", f'api_key = "{KEY}"\n')
    rig.open_door()
    switched = rig.rigctl("switch", "good")
    assert switched.returncode == 0, switched.stdout + switched.stderr
    app.start()
    assert app.answered.wait(60), app.errors


def last_ending(rig: DoorRig) -> dict[str, Any]:
    ending: dict[str, Any] = json.loads(rig.rigctl("history", "--switches", "--json").stdout)[-1]
    return ending


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_profile_that_breaks_the_apps_is_rolled_back_by_their_own_requests(rig: DoorRig, case: Case) -> None:
    rig.add_profile(case.name, case.body)
    app = App(rig.port, case.request)
    serving_the_apps(rig, app)
    switched = rig.rigctl("switch", case.name)
    answered_after = len(app.statuses)
    app.answered.clear()
    assert app.answered.wait(30)  # the restored profile answers the app again
    app.stop.set()
    app.join(60)
    said = switched.stdout + switched.stderr
    assert switched.returncode == 3, said
    assert f"{case.name} failed: the apps' requests were refused ({case.status} for python-httpx/" in said, said
    assert "rolled back: good serves again" in said and "--apps-may-change" in said, said
    assert app.errors == [], app.errors  # no error reached the app: its refused request went to good
    assert len(app.statuses) > answered_after
    assert rig.status()["active_profile"] == "good"
    ending = last_ending(rig)
    assert ending["status"] == "rolled_back" and ending["apps_refused"].startswith("the apps' requests were refused"), ending
    listed = rig.rigctl("history", "--switches").stdout
    assert "REFUSED BY THE APPS" in listed, listed


def test_a_change_the_owner_means_goes_through(rig: DoorRig) -> None:
    """A key rotation: --apps-may-change, and the apps get what the new server answers."""
    rig.add_profile("rotated", 'api_key = "sk-apps-new-key"\n')
    app = App(rig.port, completion)
    serving_the_apps(rig, app)
    switched = rig.rigctl("switch", "rotated", "--apps-may-change")
    app.stop.set()
    app.join(60)
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert rig.status()["active_profile"] == "rotated"
    assert 401 in app.statuses  # as the owner meant: the apps must take the new key


def test_apps_answered_as_before_let_the_switch_through_and_say_so(rig: DoorRig) -> None:
    app = App(rig.port, completion)
    serving_the_apps(rig, app)
    rig.add_profile("alt2", f'api_key = "{KEY}"\n', parent="qwen36-27b-fp8-tp2")
    switched = rig.rigctl("switch", "alt2")
    app.stop.set()
    app.join(60)
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert "the apps judged it: 1 client(s) answered as before" in switched.stdout, switched.stdout
    assert app.errors == [], app.errors
