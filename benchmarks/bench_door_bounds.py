"""The front door under hostile but ordinary clients, beside nginx in the same run, each in front of
the same streaming server (bench_loadgen's):

  idle rss           memory with 1,000 kept-alive connections open, each idle after one answer
  flood rss          memory after one connection pipelined 20,000 requests at it
  silent answer      at a 1,024 descriptor limit (systemd's default for a service), with 1,100
                     connections open that never send a byte: how long an app's request waits
                     for its answer (the door closes the oldest silent connection for it; nginx,
                     out of worker_connections, drains its idle "reusable" connections the same way)
  held rss           the door holding 315 requests of 2 MiB bodies through a switch (the issue's
                     1.19 GB), then after their release: what [gateway] hold_mb bounds

RSS is the process's (nginx: master and worker). The door's budgets (issue 46): RSS <= 100 MiB in
both; an app answered within 60 s beside the silent connections, better at once.

Run:  python benchmarks/bench_door_bounds.py [--idle 1000] [--flood 20000] [--silent 1100]
Prints figures; asserts nothing. nginx missing: its column is skipped, saying so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gateway import NGINX_CONF, free_port
from bench_loadgen import SERVER
from figures import figure

BODY = json.dumps({"model": "m", "prompt": "p", "max_tokens": 1}).encode()
REQUEST = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(BODY),
    BODY,
)
MIB = 1024 * 1024
APP_WAIT_S = 90.0  # past nginx's client_header_timeout (60 s): what an app's own timeout would allow


def wait_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("did not start listening")


def limited(nofile: int | None) -> object:
    def limit() -> None:
        if nofile is not None:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(nofile, hard), min(nofile, hard)))

    return limit


@contextlib.contextmanager
def door(tmp: Path, upstream: int, nofile: int | None = None) -> Iterator[tuple[int, psutil.Process]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigctl", "gateway", "--to", f"http://127.0.0.1:{upstream}", "--listen", f"127.0.0.1:{port}"],
        stderr=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp), "XDG_STATE_HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp)},
        preexec_fn=limited(nofile),  # type: ignore[arg-type]
    )
    try:
        wait_port(port, proc)
        yield port, psutil.Process(proc.pid)
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def nginx(tmp: Path, upstream: int, nofile: int = 16384, connections: int = 4096) -> Iterator[tuple[int, psutil.Process] | None]:
    binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if binary is None:
        yield None
        return
    port = free_port()
    conf = tmp / f"nginx-{port}.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, upstream=upstream, port=port, nofile=nofile, connections=connections))
    proc = subprocess.Popen([binary, "-c", str(conf), "-p", str(tmp)], stderr=subprocess.DEVNULL, preexec_fn=limited(nofile))  # type: ignore[arg-type]
    try:
        wait_port(port, proc)
        yield port, psutil.Process(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)


def rss_mib(proc: psutil.Process) -> float:
    return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / MIB


def one_answer(sock: socket.socket) -> None:
    got = b""
    while b"0\r\n\r\n" not in got:  # the upstream's answers are chunked; its last chunk ends them
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before its answer ended")
        got += chunk


def idle_rss(port: int, proc: psutil.Process, count: int) -> tuple[float, float]:
    """RSS before, and with `count` connections each idle after one answered request."""
    before = rss_mib(proc)
    socks = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            sock.sendall(REQUEST)
            one_answer(sock)
            socks.append(sock)
        time.sleep(1.0)
        return before, rss_mib(proc)
    finally:
        for sock in socks:
            sock.close()


def flood_rss(port: int, proc: psutil.Process, count: int) -> tuple[float, int]:
    """RSS after one connection pipelined `count` requests (what it read back until the door closed it)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)

    def send() -> None:
        with contextlib.suppress(OSError):
            sock.sendall(REQUEST * count)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    answered = 0
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            answered += chunk.count(b"HTTP/1.1 200")
            if answered >= count:
                break
    sock.close()
    sender.join(30)
    time.sleep(1.0)
    return rss_mib(proc), answered


def silent_answer_s(port: int, count: int) -> float | None:
    """Seconds an app's request waits beside `count` silent connections (None: not within APP_WAIT_S)."""
    silent = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.settimeout(5)
            with contextlib.suppress(OSError):
                sock.connect(("127.0.0.1", port))
            silent.append(sock)
        began = time.monotonic()
        try:
            app = socket.create_connection(("127.0.0.1", port), timeout=APP_WAIT_S)
            app.settimeout(max(1.0, APP_WAIT_S - (time.monotonic() - began)))
            app.sendall(REQUEST)
            one_answer(app)
            app.close()
        except OSError:
            return None
        return time.monotonic() - began
    finally:
        for sock in silent:
            sock.close()


def held_rss(tmp: Path, upstream: int, count: int, size: int) -> tuple[float, float, float, int, int]:
    """The rig's door (rig mode: vLLM's address from a server record) holding `count` requests of
    `size` bytes through a hold, then releasing them: RSS before, while held, after; how many were
    held and how many answered 503 at the bound."""
    from rigctl.gateway.control import DoorClient

    state = tmp / "rig-state"
    state.mkdir(mode=0o700)
    record = {
        "launcher": "process",
        "profile": "bench",
        "started": time.time(),
        "log_path": "",
        "host": "127.0.0.1",
        "port": upstream,
        "served_names": ["m"],
        "argv": [],
    }
    (state / "server.json").write_text(json.dumps(record))
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigctl", "gateway", "--listen", f"127.0.0.1:{port}"],
        stderr=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp), "RIGCTL_STATE_DIR": str(state), "XDG_CONFIG_HOME": str(tmp)},
    )
    padding = b"x" * size
    body = b'{"model": "m", "prompt": "p", "max_tokens": 1, "user": "' + padding + b'"}'
    request = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    statuses: list[bytes] = []

    def app() -> None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
            sock.sendall(request)
            statuses.append(sock.recv(12))

    try:
        wait_port(port, proc)  # type: ignore[arg-type]
        door_proc = psutil.Process(proc.pid)
        before = rss_mib(door_proc)
        with DoorClient(state / "gateway.sock") as control:
            control.hold("bench_door_bounds")
            apps = [threading.Thread(target=app, daemon=True) for _ in range(count)]
            for thread in apps:
                thread.start()
            deadline = time.monotonic() + 60
            while control.status()["held"] + len(statuses) < count and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(2.0)  # what more of the bodies the door would read
            held_now = rss_mib(door_proc)
            held = control.status()["held"]
            control.release()
        for thread in apps:
            thread.join(120)
        time.sleep(2.0)
        after = rss_mib(door_proc)
        refused = sum(1 for s in statuses if s.startswith(b"HTTP/1.1 503"))
        return before, held_now, after, held, refused
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--flood", type=int, default=20000)
    parser.add_argument("--silent", type=int, default=1100)
    parser.add_argument("--held", type=int, default=315, help="requests held through a hold, each of --held-mib")
    parser.add_argument("--held-mib", type=float, default=2.0)
    parser.add_argument("--figures", action="store_true", help="also print FIGURE lines (readme_figures.py)")
    args = parser.parse_args()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this client opens a few thousand
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    upstream = int(server.stdout.readline())
    rows: dict[str, dict[str, str]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            for name, start in (("door", door), ("nginx", nginx)):
                with start(tmp, upstream) as peer:  # type: ignore[operator]
                    if peer is None:
                        print(f"  {name}: not installed (apt-get install nginx-light); its column is skipped")
                        continue
                    port, proc = peer
                    before, idle = idle_rss(port, proc, args.idle)
                    flood, answered = flood_rss(port, proc, args.flood)
                    rows[name] = {
                        "start": f"{before:.0f} MiB",
                        "idle": f"{idle:.0f} MiB",
                        "flood": f"{flood:.0f} MiB ({answered:,} answered before it closed)",
                    }
            limit_door = (door, {"nofile": 1024})
            limit_nginx = (nginx, {"nofile": 1024, "connections": 512})  # nginx's default worker_connections
            for who, (start, limits) in (("door", limit_door), ("nginx", limit_nginx)):
                with start(tmp, upstream, **limits) as peer:  # type: ignore[operator]
                    if peer is None:
                        continue
                    took = silent_answer_s(peer[0], args.silent)
                    rows[who]["silent"] = f"{took:.2f} s" if took is not None else f"no answer within {APP_WAIT_S:g} s"
                    if args.figures:
                        figure(f"bounds.{who}.silent", f"{took:.1f} s" if took is not None else f"> {APP_WAIT_S:g} s")
            before, held_now, after, held, refused = held_rss(tmp, upstream, args.held, int(args.held_mib * MIB))
    finally:
        server.terminate()
    print(
        f"{args.idle:,} idle connections, a {args.flood:,}-request pipelining flood, {args.silent:,} silent connections "
        "at a 1,024 descriptor limit"
    )
    for who, row in rows.items():
        print(
            f"  {who:6} rss at start {row['start']:>8}  with the idle {row['idle']:>8}  after the flood {row['flood']}  "
            f"an app beside the silent: {row.get('silent', 'n/a')}"
        )
        if args.figures:
            figure(f"bounds.{who}.idle_rss", row["idle"])
            figure(f"bounds.{who}.flood_rss", row["flood"].split(" (")[0])
    print(
        f"  door holding {args.held} requests of {args.held_mib:g} MiB: rss {before:.0f} MiB before, {held_now:.0f} MiB while "
        f"{held} were held ({refused} answered 503 at the bound), {after:.0f} MiB after their release"
    )
    if args.figures:
        figure("bounds.door.held_rss", f"{held_now:.0f} MiB")
        figure("bounds.door.released_rss", f"{after:.0f} MiB")


if __name__ == "__main__":
    main()
