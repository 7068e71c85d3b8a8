"""What the front door costs the apps behind it, beside its peer: the same requests sent directly
to a streaming server, through `rigctl gateway`, and through nginx (proxy_buffering off, HTTP/1.1
keep-alive to the upstream, one worker: the gateway is one thread), interleaved round by round in
the same run. `--with-capture` adds `rigctl capture` (the door recording into one file),
`--with-record` the gateway with its recording on, `--baseline TREE` the gateway of another
source tree (a commit checked out with `git worktree add`: a change's cost in the same run).

The server (bench_loadgen's: vLLM's wire format, HTTP/1.1 chunked, an event per token) runs in its
own process, as fast as it can write or paced like an engine (--pace-ms per token). The client is
rigctl bench's load generator.

  added ttft p50/p99      time to first token through the proxy, minus direct, same round
  cpu ms / 1k tokens      the proxy's CPU (nginx: its worker) per 1,000 streamed tokens
  vs nginx                the gateway's CPU per token over nginx's (the issue's target: within 2x)

Run:  python benchmarks/bench_gateway.py [--rounds 5] [--requests 48] [--tokens 256] [--concurrency 8] [--pace-ms 10]
Prints figures; asserts nothing. nginx missing: its column is skipped, saying so.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_capture import cpu, paced, pct, send
from figures import figure

NGINX_CONF = """daemon off; worker_processes 1; user root; pid {tmp}/nginx.pid; error_log {tmp}/error.log crit;
worker_rlimit_nofile {nofile};
events {{ worker_connections {connections}; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fcgi;
  uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
  upstream engine {{ server 127.0.0.1:{upstream}; keepalive 64; }}
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location / {{
      proxy_pass http://engine; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_buffering off; proxy_request_buffering off; proxy_read_timeout 600s;
    }}
  }}
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_nginx(tmp: Path, upstream: int) -> tuple[subprocess.Popen[bytes], int] | None:
    binary = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if binary is None:
        print("  nginx: not installed (apt-get install nginx-light); its column is skipped")
        return None
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, upstream=upstream, port=port, nofile=16384, connections=4096))
    proc = subprocess.Popen([binary, "-c", str(conf), "-p", str(tmp)])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, port
        time.sleep(0.05)
    proc.kill()
    print("  nginx: did not start; its column is skipped")
    return None


def nginx_cpu(master: psutil.Process) -> float:
    return sum(cpu(p) for p in [master, *master.children(recursive=True)])


def start_rigctl(
    command: list[str], tmp: Path, upstream: int, env: dict[str, str] | None = None, tree: Path | None = None
) -> tuple[subprocess.Popen[str], int]:
    """`rigctl COMMAND --to` the server; `tree`: rigctl from that source tree instead (a baseline
    commit's, checked out with `git worktree add`), measured in the same run."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rigctl", *command, "--to", f"http://127.0.0.1:{upstream}"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tree,
        env={
            **os.environ,
            "RIGCTL_STATE_DIR": str(tmp),
            "RIGCTL_CONFIG_DIR": str(tmp),
            **({"PYTHONPATH": str(tree)} if tree else {}),
            **(env or {}),
        },
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if found:
            return proc, int(found.group(1))
    raise RuntimeError(f"{command[0]} did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pace-ms", type=float, default=0.0, help="the server's sleep between tokens")
    parser.add_argument("--with-capture", action="store_true", help="also measure rigctl capture")
    parser.add_argument("--with-asyncio", action="store_true", help="also measure the gateway on asyncio's own loop")
    parser.add_argument("--with-record", action="store_true", help="also measure the gateway recording ([gateway] record)")
    parser.add_argument("--figures", metavar="NAME", help="also print FIGURE lines as gateway.NAME.* (readme_figures.py)")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="TREE",
        help="also measure the gateway of another source tree (git worktree add TREE COMMIT)",
    )
    args = parser.parse_args()

    server = subprocess.Popen([sys.executable, "-c", paced(args.pace_ms)], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    upstream = int(server.stdout.readline())
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        peers: dict[str, tuple[str, psutil.Process, bool]] = {}
        door, door_port = start_rigctl(["gateway", "--listen", "127.0.0.1:0"], tmp, upstream)
        peers["gateway"] = (f"http://127.0.0.1:{door_port}", psutil.Process(door.pid), False)
        if args.with_asyncio:
            plain, plain_port = start_rigctl(
                ["gateway", "--listen", "127.0.0.1:0"], tmp, upstream, {"RIGCTL_GATEWAY_LOOP": "asyncio"}
            )
            peers["gw-asyncio"] = (f"http://127.0.0.1:{plain_port}", psutil.Process(plain.pid), False)
        recording = None
        if args.with_record:
            recording, record_port = start_rigctl(["gateway", "--listen", "127.0.0.1:0", "--record"], tmp / "rec", upstream)
            peers["gw-record"] = (f"http://127.0.0.1:{record_port}", psutil.Process(recording.pid), False)
        base = None
        if args.baseline:
            base, base_port = start_rigctl(["gateway", "--listen", "127.0.0.1:0"], tmp / "base", upstream, tree=args.baseline)
            peers["baseline"] = (f"http://127.0.0.1:{base_port}", psutil.Process(base.pid), False)
        nginx = start_nginx(tmp, upstream)
        if nginx is not None:
            peers["nginx"] = (f"http://127.0.0.1:{nginx[1]}", psutil.Process(nginx[0].pid), True)
        capture = None
        if args.with_capture:
            capture, capture_port = start_rigctl(
                ["capture", "--listen", "127.0.0.1:0", "--out", str(tmp / "trace.jsonl")], tmp, upstream
            )
            peers["capture"] = (f"http://127.0.0.1:{capture_port}", psutil.Process(capture.pid), False)
        direct_url = f"http://127.0.0.1:{upstream}"
        for url, _, _ in peers.values():
            send(url, 4, 8, 2)  # every path warm
        send(direct_url, 4, 8, 2)
        rows: dict[str, dict[str, list[float]]] = {name: {"ttft50": [], "ttft99": [], "cpu": []} for name in peers}
        for _ in range(args.rounds):
            direct = send(direct_url, args.requests, args.tokens, args.concurrency)
            for name, (url, proc, tree) in peers.items():
                before = nginx_cpu(proc) if tree else cpu(proc)
                through = send(url, args.requests, args.tokens, args.concurrency)
                spent = (nginx_cpu(proc) if tree else cpu(proc)) - before
                tokens = sum(r.output_tokens or 0 for r in through) / 1000
                rows[name]["cpu"].append(spent * 1000 / tokens)
                for q, key in ((0.50, "ttft50"), (0.99, "ttft99")):
                    rows[name][key].append(pct([r.ttft or 0 for r in through], q) - pct([r.ttft or 0 for r in direct], q))
        door.send_signal(signal.SIGTERM)
        door.wait(30)
        if args.with_asyncio:
            plain.send_signal(signal.SIGTERM)
            plain.wait(30)
        if recording is not None:
            recording.send_signal(signal.SIGTERM)
            recording.wait(30)
        if capture is not None:
            capture.send_signal(signal.SIGINT)
            capture.wait(30)
        if base is not None:
            base.send_signal(signal.SIGTERM)
            base.wait(30)
        if nginx is not None:
            nginx[0].terminate()
            nginx[0].wait(30)
    server.terminate()
    print(
        f"{args.requests} requests x {args.tokens} tokens at concurrency {args.concurrency}, {args.rounds} rounds "
        f"interleaved, server pace {args.pace_ms:g} ms/token (medians of the rounds)"
    )
    med = {name: {k: statistics.median(v) for k, v in row.items()} for name, row in rows.items()}
    for name, m in med.items():
        print(
            f"  {name:8} cpu {m['cpu']:6.1f} ms / 1k tokens   added ttft p50 {m['ttft50'] * 1000:+7.2f} ms  "
            f"p99 {m['ttft99'] * 1000:+7.2f} ms"
        )
    if "nginx" in med:
        ratio = med["gateway"]["cpu"] / med["nginx"]["cpu"]
        extra99 = (med["gateway"]["ttft99"] - med["nginx"]["ttft99"]) * 1000
        print(f"  gateway vs nginx: cpu {ratio:.2f}x, ttft p99 {extra99:+.2f} ms")
        if args.figures:
            figure(f"gateway.{args.figures}.ratio", f"{ratio:.1f}x")
            figure(f"gateway.{args.figures}.ttft99", f"{extra99:+.1f} ms")
    if args.figures:
        figure(f"gateway.{args.figures}.cpu", f"{med['gateway']['cpu']:.0f} ms")


if __name__ == "__main__":
    main()
