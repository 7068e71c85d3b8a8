"""The front door under faults, through the CLI: hostile bytes from an app, a door killed in the
middle of a switch, the socket a dead door left, a link planted where its socket goes, a second
door, Ctrl-C twice. The door keeps serving or ends with one line; the switch always ends honestly."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.faults.rig import MountNamespace, crashed
from tests.faults.test_recording_faults import Answers
from tests.support.door_rig import DoorRig


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[DoorRig]:
    harness = DoorRig(tmp_path / "home")
    yield harness
    harness.cleanup()


def raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(data)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
        return got


def post(port: int, body: bytes) -> bytes:
    head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
    return raw(port, head + b"Content-Length: %d\r\n\r\n" % len(body) + body)


def test_hostile_bytes_are_answered_and_the_door_keeps_serving(rig: DoorRig) -> None:
    rig.open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    assert raw(rig.port, b"\x16\x03\x01\x02\x00garbage\r\n\r\n").startswith(b"HTTP/1.1 400")  # a TLS hello
    huge = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 100_000 + b"\r\n\r\n"
    assert raw(rig.port, huge).startswith(b"HTTP/1.1 400")
    for body in (
        b'{"model": "qwen3.6-27b", "prompt": "x", "temperature": NaN, "max_tokens": 2}',
        b'{"model": "qwen3.6-27b", "prompt": "\\ud800", "max_tokens": Infinity}',
        b"[" * 100_000 + b"]" * 100_000,
    ):
        answer = post(rig.port, body)
        assert answer.startswith(b"HTTP/1.1 "), answer[:100]  # vLLM's own answer, forwarded as it was
    assert rig.serves()
    status = json.loads(rig.rigctl("gateway", "--status", "--json").stdout)
    assert status["in_flight"] == 0 and status["counts"]["refused"] >= 2, status
    code, out = rig.close_door()
    assert code == 0 and not crashed(out), out


def test_a_door_killed_mid_switch_leaves_an_honest_switch_and_a_rig_that_heals(rig: DoorRig) -> None:
    rig.streaming(1)
    switch = rig.popen("switch", "alt", "--drain", "30")
    rig.wait_for(switch, "front door holds new requests")
    assert rig.door is not None
    rig.door.kill()
    rig.door.wait(30)
    rig.door = None
    code, out = rig.finish(switch)
    assert code == 0, out  # the switch itself went through
    assert "front door" in out and not crashed(out), out
    healed = rig.rigctl("restart")  # no door now: vLLM back on the apps' port
    assert healed.returncode == 0, healed.stdout + healed.stderr
    assert rig.record()["port"] == rig.port
    assert rig.serves()


def test_the_socket_a_dead_door_left_is_taken_over_and_a_second_door_refused(rig: DoorRig) -> None:
    rig.open_door()
    assert rig.door is not None
    rig.door.kill()
    rig.door.wait(30)
    assert (rig.state_dir / "gateway.sock").exists()  # left by the SIGKILL
    rig.open_door()  # takes the dead door's place
    second = rig.rigctl("gateway", "--listen", f"127.0.0.1:{rig.port + 1}")
    assert second.returncode == 1 and "a front door already runs" in second.stderr, second.stderr
    assert len(second.stderr.strip().splitlines()) == 1


def test_a_link_where_the_socket_goes_is_never_followed(rig: DoorRig) -> None:
    target = rig.home / "precious.txt"
    target.write_text("keep me\n")
    rig.state_dir.mkdir(parents=True, exist_ok=True)
    (rig.state_dir / "gateway.sock").symlink_to(target)
    rig.open_door()
    assert target.read_text() == "keep me\n"
    assert not (rig.state_dir / "gateway.sock").is_symlink()


def test_ctrl_c_twice_ends_the_door_without_a_traceback(rig: DoorRig) -> None:
    rig.open_door("--grace", "5")
    assert rig.rigctl("switch", "good").returncode == 0
    assert rig.door is not None
    rig.door.send_signal(signal.SIGINT)
    rig.door.send_signal(signal.SIGINT)
    code, out = rig.finish(rig.door, timeout=30)
    rig.door = None
    assert code == 0 and "stopped" in out and not crashed(out), out
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{rig.port}/v1/models", timeout=5)


class Mute:
    """An HTTP server on 127.0.0.1 that takes every connection and reads the request, then
    answers the completion only after `answer_after_s` (None: never); /health answers at once
    while `health` is on (a vLLM in a long non-streamed generation), never when off (a hung one)."""

    def __init__(self, health: bool, answer_after_s: float | None) -> None:
        self.health, self.answer_after_s = health, answer_after_s
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = conn.recv(65536)
            if not chunk:
                return
            got += chunk
        if got.startswith(b"GET /health"):
            if self.health:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        if self.answer_after_s is not None and not self.stopped.wait(self.answer_after_s):
            body = b'{"choices": [{"text": "late, and whole"}]}'
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()
        for conn in self.held:
            conn.close()


@pytest.mark.parametrize("health", [False, True], ids=["hung", "generating"])
def test_an_engine_that_takes_a_request_and_never_answers_gets_the_app_a_502_a_slow_one_never(rig: DoorRig, health: bool) -> None:
    """With [gateway] silent_s = 1: a server whose /health gives no answer either is hung, and the
    app gets its 502 within seconds instead of at its own timeout; one whose /health answers is
    generating (a non-streamed answer says nothing until done), and its answer, 4 s later, arrives."""
    rig.write_config("[server]\nstop_grace = 3\nkill_wait = 2\n[gateway]\nsilent_s = 1\n")
    mute = Mute(health=health, answer_after_s=None if not health else 4.0)
    try:
        said = rig.open_door("--to", f"http://127.0.0.1:{mute.port}", "--listen", "127.0.0.1:0")
        bound = re.search(r"the apps' address: http://127\.0\.0\.1:(\d+)", said[0])
        assert bound, said
        port = int(bound.group(1))
        answer = post(port, b'{"model": "m", "prompt": "x", "max_tokens": 4000}')
        if health:
            assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b'late, and whole"}]}'), answer
        else:
            assert answer.startswith(b"HTTP/1.1 502"), answer
            assert b"sent nothing in" in answer and b"/health gave no answer" in answer, answer
        code, out = rig.close_door()
        assert code == 0 and not crashed(out), out
    finally:
        mute.close()


def test_a_full_disk_stops_the_recording_said_once_and_the_door_keeps_forwarding(tmp_path: Path) -> None:
    """The recording's folder on a 256 kB tmpfs, 100 kB prompts: the fourth or so fills it. Every
    request is still answered; the door says once that recording stopped; the file keeps whole lines."""
    ns = MountNamespace()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proc: subprocess.Popen[str] | None = None
    try:
        state = tmp_path / "state"
        traces = state / "gateway-traces"
        traces.mkdir(parents=True, mode=0o700)
        done = ns.run("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(traces))
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        to = f"http://127.0.0.1:{server.server_address[1]}"
        argv = [sys.executable, "-m", "rigctl", "gateway", "--to", to, "--listen", "127.0.0.1:0", "--record"]
        env = {**os.environ, "RIGCTL_STATE_DIR": str(state), "RIGCTL_CONFIG_DIR": str(tmp_path / "config")}
        proc = subprocess.Popen([*ns.prefix, *argv], env=env, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        said = [proc.stderr.readline(), proc.stderr.readline()]
        bound = re.search(r"the apps' address: http://127\.0\.0\.1:(\d+)", said[0])
        assert bound, said
        prompt = "many words " * 10_000
        with httpx.Client(timeout=30, trust_env=False) as client:
            for _ in range(8):
                answer = client.post(f"http://127.0.0.1:{bound.group(1)}/v1/completions", json={"model": "m", "prompt": prompt})
                assert answer.status_code == 200 and answer.json()["choices"][0]["text"] == "ok"
        proc.terminate()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "Traceback" not in err, err
        stopped = re.findall(r"recording stopped after (\d+) request\(s\) \(.*No space left on device\)", err)
        assert len(stopped) == 1 and 0 < int(stopped[0]) < 8, err  # said once
        kept = ns.run("sh", "-c", f"cat {traces}/door-*.jsonl").stdout.splitlines()
        assert len(kept) == 1 + int(stopped[0]) and all(json.loads(line) for line in kept)  # whole lines only
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.communicate()
        server.shutdown()
        ns.close()


ACTIVATE = (
    "import os, sys\n"
    "os.dup2(int(sys.argv[1]), 3)\n"
    "os.environ.update(LISTEN_FDS='1', LISTEN_PID=str(os.getpid()))\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'rigctl', 'gateway', *sys.argv[2:]])\n"
)


def test_under_socket_activation_a_restart_of_the_door_refuses_no_connection(tmp_path: Path) -> None:
    """The listening socket held as systemd holds it (rigctl-gateway.socket) and passed at fd 3 with
    LISTEN_PID/LISTEN_FDS: a request sent while the door is down waits in the socket's backlog and
    is answered by the next door; a socket on a public address without --allow-remote is refused."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    port = listener.getsockname()[1]
    env = {**os.environ, "RIGCTL_STATE_DIR": str(tmp_path / "state"), "RIGCTL_CONFIG_DIR": str(tmp_path / "config")}
    to = f"http://127.0.0.1:{server.server_address[1]}"

    def door(*args: str) -> subprocess.Popen[str]:
        argv = [sys.executable, "-c", ACTIVATE, str(listener.fileno()), "--to", to, *args]
        return subprocess.Popen(argv, env=env, pass_fds=(listener.fileno(),), stderr=subprocess.PIPE, text=True)

    doors: list[subprocess.Popen[str]] = []
    try:
        first = door()
        doors.append(first)
        assert first.stderr is not None
        assert f"the apps' address: http://127.0.0.1:{port} ->" in first.stderr.readline()
        assert httpx.post(f"http://127.0.0.1:{port}/v1/completions", json={"prompt": "x"}, timeout=30).status_code == 200
        first.kill()
        first.wait()
        answers: list[int] = []
        waiting = threading.Thread(
            target=lambda: answers.append(
                httpx.post(f"http://127.0.0.1:{port}/v1/completions", json={"prompt": "y"}, timeout=60).status_code
            )
        )
        waiting.start()  # no door now: the connection waits in the backlog
        waiting.join(1.0)
        assert answers == []
        second = door()
        doors.append(second)
        waiting.join(60)
        assert answers == [200]  # the next door took it: nothing was refused
    finally:
        for proc in doors:
            if proc.poll() is None:
                proc.terminate()
                proc.communicate(timeout=30)
        listener.close()
        server.shutdown()


def test_a_passed_socket_beyond_loopback_needs_allow_remote(tmp_path: Path) -> None:
    listener = socket.create_server(("0.0.0.0", 0))
    env = {**os.environ, "RIGCTL_STATE_DIR": str(tmp_path / "state"), "RIGCTL_CONFIG_DIR": str(tmp_path / "config")}
    try:
        argv = [sys.executable, "-c", ACTIVATE, str(listener.fileno()), "--to", "http://127.0.0.1:9"]
        done = subprocess.run(argv, env=env, pass_fds=(listener.fileno(),), capture_output=True, text=True, timeout=60)
    finally:
        listener.close()
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "listens on 0.0.0.0, beyond loopback" in done.stderr and "--allow-remote" in done.stderr, done.stderr


class Drains(BaseHTTPRequestHandler):
    """An upstream that reads any body a megabyte at a time, keeps none of it, and answers its size."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        left, got = int(self.headers["content-length"]), 0
        while left:
            chunk = self.rfile.read(min(left, 1 << 20))
            if not chunk:
                return
            left -= len(chunk)
            got += len(chunk)
        data = json.dumps({"bytes": got}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


def send_body(port: int, size: int, out: list[bytes]) -> None:
    block = b'{"prompt": "' + b"x" * (1 << 20)
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
        s.sendall(b"Connection: close\r\nContent-Length: %d\r\n\r\n" % size)
        sent = 0
        while sent < size:
            part = block[: min(len(block), size - sent)]
            s.sendall(part)
            sent += len(part)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
        out.append(got)


def test_four_200_mb_bodies_stream_through_in_bounded_memory_while_others_are_served(tmp_path: Path) -> None:
    """Four apps each send a 200 MB body at once: each reaches the upstream whole, the door's peak
    resident memory stays far below one body (streamed, not gathered; 77 MiB measured, of which
    4 x 16 MiB are the bodies' first bytes kept for the prefix-reuse count), and a short request
    made meanwhile is answered."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Drains)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "RIGCTL_STATE_DIR": str(tmp_path / "state"), "RIGCTL_CONFIG_DIR": str(tmp_path / "config")}
    argv = [sys.executable, "-m", "rigctl", "gateway", "--to", f"http://127.0.0.1:{server.server_address[1]}"]
    proc = subprocess.Popen([*argv, "--listen", "127.0.0.1:0"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        bound = re.search(r"the apps' address: http://127\.0\.0\.1:(\d+)", proc.stderr.readline())
        assert bound, "the door did not say its address"
        port = int(bound.group(1))
        size = 200 * 1024 * 1024
        answers: list[bytes] = []
        senders = [threading.Thread(target=send_body, args=(port, size, answers)) for _ in range(4)]
        for sender in senders:
            sender.start()
        short = httpx.post(f"http://127.0.0.1:{port}/v1/completions", json={"prompt": "hi"}, timeout=120)
        assert short.status_code == 200 and short.json() == {"bytes": len(short.request.content)}, short.text
        for sender in senders:
            sender.join(300)
        assert len(answers) == 4 and all(a.startswith(b"HTTP/1.1 200") and a.endswith(b'{"bytes": %d}' % size) for a in answers)
        peak_kib = next(
            int(line.split()[1]) for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines() if line.startswith("VmHWM:")
        )
        assert peak_kib < 160 * 1024, f"the door's peak RSS was {peak_kib // 1024} MiB for four 200 MB bodies"
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
        server.shutdown()
