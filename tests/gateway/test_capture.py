"""`rigctl capture`, the front door in front of one server with its recording into one file, as
a real process before the simulator: every answer the app gets is what the server sent (the same
bytes through a TCP tap), the trace holds what the app sent and no header value, the door's
refusals and bounds hold (no other address, loopback only, no password written), bodies vLLM
takes that are not strict JSON are kept as lines, and Ctrl-C ends it with a count."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from rigctl.bench.trace import read_trace
from tests.support.capture_run import SECRET, TOOLS, App, Capture
from tests.support.serving import free_port
from tests.support.sim_server import serve_sim
from tests.support.tap import Tap


@pytest.fixture
def sim(sim_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    yield from (
        url
        for url, _, _ in serve_sim(["--enable-auto-tool-choice", "--tool-call-parser", "hermes"], sim_env, tmp_path / "vllm.log")
    )


@pytest.fixture
def tapped(sim: str) -> Iterator[Tap]:
    tap = Tap(int(sim.rsplit(":", 1)[1]))
    yield tap
    tap.close()


def test_the_apps_get_what_vllm_sent_and_the_trace_holds_what_they_sent(tapped: Tap, tmp_path: Path) -> None:
    capture = Capture(tapped.url, tmp_path / "trace.jsonl")
    app = App(capture, tapped)
    chat = {
        "model": "qwen3.6-27b",
        "messages": [{"role": "user", "content": "What is the weather in Oslo?"}],
        "tools": TOOLS,
        "tool_choice": "auto",
        "max_tokens": 12,
        "temperature": 0,
    }
    app.post("/v1/chat/completions", chat)
    streamed = {
        "model": "qwen3.6-27b",
        "messages": [{"role": "user", "content": "Tell me a story."}],
        "max_tokens": 20,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    app.post("/v1/chat/completions", streamed)
    completion = {"model": "qwen3.6-27b", "prompt": "Once upon a time", "max_tokens": 9, "stream": True}
    app.post("/v1/completions", completion)
    plain = {"model": "qwen3.6-27b", "prompt": "The capital of France is", "max_tokens": 5}
    answer = app.post("/v1/completions", plain).json()
    refused = {"model": "another-model", "prompt": "x", "max_tokens": 5}
    assert app.post("/v1/completions", refused).status_code == 404  # forwarded as it failed
    assert app.client.get("/v1/models").json()["data"][0]["id"] == "qwen3.6-27b"  # passed through, untraced
    app.close()
    rc, said = capture.stop()
    assert rc == 0, said
    assert f"5 request(s) recorded into {capture.out}" in said, said

    text = capture.out.read_text()
    assert SECRET not in text and "Bearer" not in text and "authorization" not in text.lower()
    assert stat.S_IMODE(os.stat(capture.out).st_mode) == 0o600
    head, entries = capture.trace()
    assert head["rigctl_trace"] == 1 and "no header value" in head["about"] and head["upstream"] == tapped.url
    assert [(e["endpoint"], e["body"]) for e in entries] == app.sent[:5]  # in arrival order, as sent
    assert [e["stream"] for e in entries] == [False, True, True, False, False]
    assert [e["status"] for e in entries] == [200, 200, 200, 200, 404]
    assert entries[3]["prompt_tokens"] == answer["usage"]["prompt_tokens"]
    assert entries[3]["completion_tokens"] == answer["usage"]["completion_tokens"] == 5
    assert entries[1]["completion_tokens"] == 20  # the stream's usage event
    assert "completion_tokens" not in entries[2] and entries[2]["chunks"] >= 1  # it asked for no usage
    assert entries[4]["error"].startswith("The model `another-model` does not exist")
    assert all("error" not in e for e in entries[:4])
    assert [e["t"] for e in entries] == sorted(e["t"] for e in entries) and entries[0]["t"] >= 0
    _, replayable = read_trace(capture.out)  # what the bench reads
    assert [r.body for r in replayable] == [body for _, body in app.sent[:5]]


class HeldStream(BaseHTTPRequestHandler):
    """Streams one event, then holds the rest until the test releases it."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b'data: {"choices":[{"index":0,"text":" first"}]}\n\n')
        self.wfile.flush()
        self.server.release.wait(30)  # type: ignore[attr-defined]
        self.wfile.write(b'data: {"choices":[{"index":0,"text":" rest"}]}\n\ndata: [DONE]\n\n')
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_stream_is_passed_on_as_it_arrives_not_when_it_ends(tmp_path: Path) -> None:
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), HeldStream)
    upstream.release = threading.Event()  # type: ignore[attr-defined]
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    capture = Capture(f"http://127.0.0.1:{upstream.server_address[1]}", tmp_path / "trace.jsonl")
    body = {"model": "m", "prompt": "p", "max_tokens": 2, "stream": True}
    seen = []
    with httpx.stream("POST", f"{capture.url}/v1/completions", json=body, timeout=60, trust_env=False) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                # the first event reached the app while the server still held the rest back
                seen.append((line, upstream.release.is_set()))  # type: ignore[attr-defined]
                upstream.release.set()  # type: ignore[attr-defined]
    assert seen[0] == ('data: {"choices":[{"index":0,"text":" first"}]}', False)
    assert [line for line, _ in seen[1:]] == ['data: {"choices":[{"index":0,"text":" rest"}]}', "data: [DONE]"]
    capture.stop()
    upstream.shutdown()
    _, entries = capture.trace()
    assert entries[0]["chunks"] == 2 and "error" not in entries[0]


def test_an_upstream_that_is_not_there_is_a_503_with_retry_after_in_vllms_shape(tmp_path: Path) -> None:
    gone = f"http://127.0.0.1:{free_port()}"
    capture = Capture(gone, tmp_path / "trace.jsonl")
    with httpx.Client(base_url=capture.url, timeout=30, trust_env=False) as client:
        answer = client.post("/v1/completions", json={"model": "m", "prompt": "hi", "max_tokens": 3})
    assert answer.status_code == 503 and "refuses connections" in answer.json()["error"]["message"], answer.text
    assert answer.headers["retry-after"]
    rc, said = capture.stop()
    assert rc == 0 and "0 request(s) recorded" in said, said  # nothing reached a server: nothing to replay


def test_ctrl_c_waits_for_an_answer_in_flight_and_a_second_cuts_it_saying_why(tapped: Tap, tmp_path: Path) -> None:
    capture = Capture(tapped.url, tmp_path / "trace.jsonl")
    lines: list[str] = []
    started = threading.Event()

    def long_stream() -> None:
        body = {"model": "qwen3.6-27b", "prompt": "go on", "max_tokens": 100000, "stream": True}
        try:
            with httpx.stream("POST", f"{capture.url}/v1/completions", json=body, timeout=60, trust_env=False) as r:
                for line in r.iter_lines():
                    lines.append(line)
                    started.set()
        except httpx.HTTPError as exc:
            lines.append(f"error: {exc}")
        started.set()

    thread = threading.Thread(target=long_stream)
    thread.start()
    assert started.wait(60)
    capture.proc.send_signal(signal.SIGINT)
    assert capture.proc.stderr is not None
    said = ""
    while "Ctrl-C again" not in said:  # (after what it said at its start)
        line = capture.proc.stderr.readline()
        assert line, said
        said += line
    assert "1 answer(s) in flight get up to 30 s (Ctrl-C again cuts them now, each app told why)" in said, said
    rc, said = capture.stop()
    thread.join(30)
    assert rc == 0 and "1 answer(s) still running were cut" in said, said
    errors = [json.loads(x[6:])["error"] for x in lines if x.startswith("data: {") and '"error"' in x]
    assert errors and errors[0]["message"] == "rigctl gateway: the front door was stopped" and errors[0]["code"] == 503, lines[-3:]
    assert [x for x in lines if x][-1] == "data: [DONE]"  # a stream that ended, with its reason: no connection error
    _, entries = capture.trace()
    assert entries[0]["error"].startswith("cut before its answer ended"), entries[0]


def test_max_requests_ends_it_and_an_existing_trace_is_never_written_over(tapped: Tap, tmp_path: Path) -> None:
    out = tmp_path / "trace.jsonl"
    capture = Capture(tapped.url, out, "--max-requests", "2")
    with httpx.Client(base_url=capture.url, timeout=30, trust_env=False) as client:
        for n in range(2):
            client.post("/v1/completions", json={"model": "qwen3.6-27b", "prompt": f"p{n}", "max_tokens": 2})
    assert capture.proc.wait(30) == 0
    kept = out.read_bytes()
    again = subprocess.run(
        [sys.executable, "-m", "rigctl", "capture", "--to", tapped.url, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 2 and out.read_bytes() == kept
    assert (
        again.stderr.strip()
        .splitlines()[-1]
        .endswith(f"{out}: already exists; a recording never writes over a file (give another --out)")
    )
    assert "Traceback" not in again.stderr


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--listen", "nowhere"], "--listen: must be HOST:PORT (e.g. 127.0.0.1:9477), not 'nowhere'"),
        (["--listen", "0.0.0.0:8001"], "refusing to open the rig to 0.0.0.0"),
        (["--duration", "0"], "--duration: must be a positive number of seconds, not 0"),
        (["--max-requests", "0"], "--max-requests: must be a whole number of requests of at least 1, not 0"),
        (["--to", "127.0.0.1:8000"], "give the server's base URL"),
    ],
)
def test_bad_flags_are_one_line(argv: list[str], says: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rigctl",
            "capture",
            "--out",
            str(tmp_path / "t.jsonl"),
            *(["--to", "http://127.0.0.1:9"] if "--to" not in argv else []),
            *argv,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and says in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "t.jsonl").exists()


def test_only_a_path_is_forwarded_and_a_password_in_to_is_written_nowhere(sim: str, tmp_path: Path) -> None:
    """Not an open forward proxy: `@host:port/...` and absolute targets are 400; the user:password
    of --to reaches neither an app's answer nor the trace."""
    port = sim.rsplit(":", 1)[1]
    capture = Capture(f"http://admin:hunter2@127.0.0.1:{port}", tmp_path / "trace.jsonl")
    host, bound = capture.url[len("http://") :].split(":")
    for target in (b"@127.0.0.1:22/v1/models", b"http://127.0.0.1:22/v1/models", b"//evil/v1/models"):
        with socket.create_connection((host, int(bound)), timeout=30) as sock:
            sock.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n\r\n")
            got = sock.recv(65536)
        assert got.startswith(b"HTTP/1.1 400"), (target, got[:200])
    with httpx.Client(base_url=capture.url, timeout=30, trust_env=False) as client:
        answer = client.post("/v1/completions", json={"model": "qwen3.6-27b", "prompt": "hi", "max_tokens": 2})
    assert answer.status_code == 200
    rc, said = capture.stop()
    head, entries = capture.trace()
    assert rc == 0 and len(entries) == 1
    assert "hunter2" not in said + capture.out.read_text() and head["upstream"] == f"http://127.0.0.1:{port}"


def test_bodies_vllm_takes_that_are_not_strict_json_are_kept_as_lines(sim: str, tmp_path: Path) -> None:
    capture = Capture(sim, tmp_path / "trace.jsonl")
    host, bound = capture.url[len("http://") :].split(":")
    bodies = (
        b'{"model": "qwen3.6-27b", "prompt": "x", "temperature": NaN, "max_tokens": 2}',
        b'{"model": "qwen3.6-27b", "prompt": "x", "max_tokens": Infinity}',
        b'{"model": "qwen3.6-27b", "prompt": "\\ud800 lone", "max_tokens": 2}',
    )
    for body in bodies:
        head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
        with socket.create_connection((host, int(bound)), timeout=30) as sock:
            sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            got = b""
            while chunk := sock.recv(65536):
                got += chunk
        assert got.startswith(b"HTTP/1.1 "), got[:100]  # vLLM's own answer, as it was
    rc, said = capture.stop()
    assert rc == 0 and "Traceback" not in said and "3 request(s) recorded" in said, said
    _, entries = capture.trace()  # every line whole and strict JSON
    assert len(entries) == 3
    assert [e.get("unkept", "")[:32] for e in entries[:2]] == ["its body is not strict JSON (NaN"] * 2
    assert entries[2]["body"]["prompt"] == "\ud800 lone"
