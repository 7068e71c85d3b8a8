"""The bounds on the apps' side, through the real `rigctl gateway` process in front of the
simulator: hostile but ordinary clients (half a head, an idle keep-alive, a body that stops,
silent connections past a 1,024 descriptor limit, a pipelining flood, held bodies past the bound,
a request without the key) are closed, paused or refused as nginx would, and an app is still
answered."""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rigctl.gateway.bounds import PIPELINE_DEPTH, RESERVED_FDS
from tests.support.door_rig import DoorRig
from tests.support.sim_server import serve_sim

MODELS = b"GET /v1/models HTTP/1.1\r\nHost: door\r\n\r\n"


@pytest.fixture
def sim(sim_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    yield from (url for url, _, _ in serve_sim([], sim_env, tmp_path / "vllm.log"))


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def until_closed(sock: socket.socket) -> bytes:
    """Everything the door sends on `sock` until it closes it (the test fails past the socket's timeout)."""
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    sock.close()
    return got


def test_a_half_head_an_idle_connection_and_a_stalled_body_are_closed_at_their_timeouts(rig: DoorRig, sim: str) -> None:
    rig.write_config("[gateway]\nheader_s = 1\nkeepalive_s = 1\nbody_s = 1\n")
    rig.open_door("--to", sim)
    half = connect(rig.port)
    half.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: door\r\nContent-Type: applic")
    idle = connect(rig.port)
    idle.sendall(MODELS)
    stalled = connect(rig.port)
    stalled.sendall(b'POST /v1/completions HTTP/1.1\r\nHost: door\r\nContent-Length: 100\r\n\r\n{"model": ')
    silent = connect(rig.port)

    assert until_closed(half).startswith(b"HTTP/1.1 408 "), "a half head is answered 408 and closed"
    timed_out = until_closed(stalled)
    assert timed_out.startswith(b"HTTP/1.1 408 ") and b"request body" in timed_out, timed_out[:300]
    answered = until_closed(idle)  # its answer, then the door closes it once idle past keepalive_s
    assert answered.startswith(b"HTTP/1.1 200 ") and answered.count(b"HTTP/1.1") == 1, answered[:300]
    assert until_closed(silent) == b""  # never a byte: closed without an answer
    assert httpx.get(f"http://127.0.0.1:{rig.port}/v1/models", timeout=30).status_code == 200  # an app still is


def one_answer(sock: socket.socket) -> bytes:
    """One whole answer framed by its Content-Length, read from a kept-alive connection."""
    got = b""
    while b"\r\n\r\n" not in got:
        got += sock.recv(65536)
    head, _, body = got.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def limited_door(rig: DoorRig, descriptors: int, *args: str) -> subprocess.Popen[str]:
    """`rigctl gateway` run as systemd runs a service by default: at most `descriptors` open files
    (soft and hard, so the door cannot raise it)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, descriptors))

    door = subprocess.Popen(
        [sys.executable, "-m", "rigctl", "gateway", "--listen", f"127.0.0.1:{rig.port}", *args],
        env=rig.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=limit,
    )
    rig.door = door
    rig.wait_for(door, "the apps' address")
    return door


def test_silent_connections_past_the_descriptor_limit_never_keep_an_app_out(rig: DoorRig, sim: str) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 1400:
        pytest.skip(f"this test opens 1,100 connections; the descriptor limit here is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1400), hard))
    door = limited_door(rig, 1024, "--to", sim)
    cap = (1024 - RESERVED_FDS) // 2
    silent: list[socket.socket] = []
    try:
        for _ in range(1100):
            silent.append(connect(rig.port))
        answer = httpx.get(f"http://127.0.0.1:{rig.port}/v1/models", timeout=60)
        assert answer.status_code == 200 and answer.json()["data"], answer.text
        assert door.poll() is None  # still serving
        silent[0].settimeout(30)
        assert silent[0].recv(1) == b""  # the oldest silent one gave way
        assert httpx.get(f"http://127.0.0.1:{rig.port}/v1/models", timeout=60).status_code == 200
    finally:
        for sock in silent:
            sock.close()
    closed = sum(1 for sock in silent if sock.fileno() == -1)
    assert closed == len(silent) and len(silent) > cap


def test_a_pipelining_flood_is_answered_to_the_pipelines_depth_then_closed(rig: DoorRig, sim: str) -> None:
    rig.open_door("--to", sim)
    flood = connect(rig.port)

    def send() -> None:
        try:
            flood.sendall(MODELS * 20_000)
        except OSError:
            pass  # the door closed it: what was left unsent is the client's to send again

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    got = until_closed(flood)
    sender.join(30)
    answers = got.count(b"HTTP/1.1 200 ")
    assert 1 <= answers <= PIPELINE_DEPTH, answers  # in order, then closed: the rest was never parsed into requests
    assert httpx.get(f"http://127.0.0.1:{rig.port}/v1/models", timeout=30).status_code == 200


def test_a_request_without_the_key_is_refused_on_its_head(rig: DoorRig, sim: str) -> None:
    key = rig.home / "door.key"
    key.write_text("s3cret\n")
    key.chmod(0o600)
    rig.open_door("--to", sim, "--allow-remote", "--api-key-file", str(key))
    sock = connect(rig.port)
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: door\r\nContent-Length: 50000000\r\n\r\n")  # and no body
    answer = until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]


def test_listen_by_name_says_nothing_of_systemd(rig: DoorRig, sim: str) -> None:
    said = rig.open_door("--to", sim, "--listen", f"localhost:{rig.port}")
    assert not any("systemd" in line for line in said), said


@pytest.fixture
def slow_sim(sim_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """The simulator at a rig's own pace: a 40-token stream takes a few seconds."""
    yield from (url for url, _, _ in serve_sim([], {**sim_env, "RIGCTL_SIM_SPEED": "0.5"}, tmp_path / "slow.log"))


def test_sigterm_closes_idle_connections_at_once_and_gives_the_streams_their_grace(rig: DoorRig, slow_sim: str) -> None:
    rig.open_door("--to", slow_sim, "--grace", "60")
    idle = connect(rig.port)
    idle.sendall(MODELS)
    assert one_answer(idle).startswith(b"HTTP/1.1 200 ")
    body = {"model": "qwen3.6-27b", "prompt": "a story", "max_tokens": 40, "stream": True}
    reasons: list[str | None] = []
    with httpx.stream("POST", f"http://127.0.0.1:{rig.port}/v1/completions", json=body, timeout=60) as stream:
        lines = stream.iter_lines()
        assert next(lines).startswith("data: ")
        assert rig.door is not None
        rig.door.terminate()
        idle.settimeout(30)
        assert idle.recv(1) == b""  # closed while the stream still runs
        for line in lines:
            if line.startswith("data: {"):
                reasons.append(json.loads(line[6:])["choices"][0].get("finish_reason"))
    assert reasons and reasons[-1] == "length", reasons  # the stream ran to its end within the grace
    code, out = rig.finish(rig.door)
    rig.door = None
    assert code == 0 and "were cut" not in out, out
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{rig.port}/v1/models", timeout=5)  # nothing listens now


def test_held_bodies_past_the_bound_are_never_kept_and_every_request_is_answered(rig: DoorRig) -> None:
    """[gateway] hold_mb bounds what the door keeps of held bodies: past it the rest of a held body
    waits in its app's socket, and a request arriving then is answered 503 with Retry-After at
    once; every held one is answered after the release."""
    from rigctl.gateway.control import DoorClient

    rig.write_config("[server]\nstop_grace = 3\n[gateway]\nhold_mb = 2\n")
    rig.open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    padding = "x" * (1536 * 1024)  # 1.5 MiB a body: six of them are four times the bound
    body = {"model": "qwen3.6-27b", "prompt": "hi", "max_tokens": 2, "user": padding}
    answers: list[httpx.Response] = []

    def ask() -> None:
        answers.append(httpx.post(f"http://127.0.0.1:{rig.port}/v1/completions", json=body, timeout=120))

    with DoorClient(rig.state_dir / "gateway.sock") as door:
        door.hold()
        askers = [threading.Thread(target=ask, daemon=True) for _ in range(6)]
        for asker in askers:
            asker.start()
        deadline = time.monotonic() + 60
        while (status := door.status())["held"] + len(answers) < 6 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # what more would come of the bodies
        status = door.status()
        assert status["held"] + len(answers) == 6, status
        # the bound, and at most one read past it a request
        assert status["held_bytes"] <= 2 * 1024 * 1024 + status["held"] * 256 * 1024, status
        door.release()
    for asker in askers:
        asker.join(120)
    assert len(answers) == 6 and {a.status_code for a in answers} <= {200, 503}, [a.status_code for a in answers]
    assert any(a.status_code == 200 for a in answers)
    for refused in (a for a in answers if a.status_code == 503):
        assert refused.headers["retry-after"] and "(the bound)" in refused.json()["error"]["message"], refused.text
