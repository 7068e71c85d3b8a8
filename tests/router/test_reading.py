"""Each rig read live over HTTP on 127.0.0.1: what it serves and the context it was started with,
or one line saying why not."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rigctl.rig_table import RemoteRig
from rigctl.router.reading import ServedModel, read_rig
from tests.support.serving import free_port

ANSWERS: dict[str, tuple[int, bytes]] = {}


class Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        key = self.headers.get("Authorization") or ""
        self.server.seen.append(key)  # type: ignore[attr-defined]  # before the answer: the client returns on it
        status, body = ANSWERS["models"] if key in ("", "Bearer sk-box") else (401, b'{"error": "no"}')
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def rig_url() -> Iterator[tuple[str, list[str]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", server.seen  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


def test_models_and_their_context_with_the_key_from_its_variable(
    rig_url: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = rig_url
    cards = [{"id": "qwen3.6-27b", "max_model_len": 131072}, {"id": "other"}]
    ANSWERS["models"] = (200, json.dumps({"object": "list", "data": cards}).encode())
    monkeypatch.setenv("BOX_KEY", "sk-box")
    reading = read_rig(RemoteRig("box", url=url, api_key_env="BOX_KEY"))
    assert reading.problem == "" and reading.models == (ServedModel("qwen3.6-27b", 131072), ServedModel("other", None))
    assert seen == ["Bearer sk-box"]


def test_why_a_rig_is_left_out_in_one_line(rig_url: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    url, _ = rig_url
    monkeypatch.delenv("BOX_KEY", raising=False)
    ANSWERS["models"] = (200, b"<html>not a vLLM</html>")
    assert read_rig(RemoteRig("box", url=url)).problem == "its /v1/models is not an OpenAI model list"
    ANSWERS["models"] = (200, b'{"data": []}')
    assert read_rig(RemoteRig("box", url=url)).problem == "serves no model"
    ANSWERS["models"] = (503, b"")
    assert read_rig(RemoteRig("box", url=url)).problem == "answered HTTP 503 to /v1/models"
    monkeypatch.setenv("BOX_KEY", "sk-wrong")
    assert read_rig(RemoteRig("box", url=url, api_key_env="BOX_KEY")).problem == "refused the key: HTTP 401"
    monkeypatch.delenv("BOX_KEY")
    ANSWERS["models"] = (401, b"")
    assert (
        read_rig(RemoteRig("box", url=url, api_key_env="BOX_KEY")).problem == "refused the key: HTTP 401 ($BOX_KEY is not set here)"
    )
    down = read_rig(RemoteRig("box", url=f"http://127.0.0.1:{free_port()}"), timeout_s=2)
    assert down.problem.startswith("not answering (ConnectionRefusedError") and down.models == ()
