"""What `rigctl capture` costs the apps behind it (the front door in front of one server, recording
every generation request into one file: `rigctl gateway --to URL --out FILE`): the same requests
sent directly to a streaming server and through it, interleaved round by round, in the same run.

The server (bench_loadgen's: vLLM's wire format, HTTP/1.1 chunked, an event per token, usage,
[DONE]) runs in its own process, as fast as it can write or paced like an engine (--pace-ms per
token). The client is rigctl bench's load generator; `rigctl capture` runs as the owner runs it.

  added ttft p50/p99      time to first token, through the proxy minus direct
  added e2e p50/p99       end to end, through the proxy minus direct
  proxy cpu ms/1k tok     the capture process's CPU per 1,000 streamed tokens
  vs server               that, over the streaming server's own CPU for the same tokens

Run:  python benchmarks/bench_capture.py [--rounds 3] [--requests 48] [--tokens 256] [--concurrency 8]
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_loadgen import SERVER  # the same streaming server the load generator is measured on
from figures import figure

from rigctl.bench.loadgen import LoadTarget, RequestOptions, RequestResult, run_load, schedule
from rigctl.bench.workload import Prompt


def paced(pace_ms: float) -> str:
    """The server, sleeping pace_ms between tokens when asked (an engine's decode pace)."""
    if pace_ms <= 0:
        return SERVER
    return SERVER.replace(
        "await writer.drain()  # one write per token",
        f"await asyncio.sleep({pace_ms / 1000!r}); await writer.drain()  # one write per token",
    )


def send(url: str, requests: int, tokens: int, concurrency: int) -> list[RequestResult]:
    prompts = schedule(lambda i: Prompt(i, f"p{i}", tokens), iter([0.0] * requests))
    results, _ = run_load(LoadTarget(url, "m"), prompts, concurrency, RequestOptions())
    failed = [r.error for r in results if not r.success]
    assert not failed, failed[:3]
    return results


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pace-ms", type=float, default=0.0, help="the server's sleep between tokens")
    parser.add_argument("--figures", metavar="NAME", help="also print FIGURE lines as capture.NAME.* (readme_figures.py)")
    args = parser.parse_args()

    server = subprocess.Popen([sys.executable, "-c", paced(args.pace_ms)], stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    with tempfile.TemporaryDirectory() as tmp:
        capture = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rigctl",
                "capture",
                "--to",
                f"http://127.0.0.1:{port}",
                "--listen",
                "127.0.0.1:0",
                "--out",
                str(Path(tmp) / "trace.jsonl"),
            ],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "RIGCTL_STATE_DIR": tmp, "RIGCTL_CONFIG_DIR": tmp},
        )
        assert capture.stderr is not None
        proxy_port = int(re.search(r"http://127\.0\.0\.1:(\d+)", capture.stderr.readline()).group(1))  # type: ignore[union-attr]
        direct_url, proxied_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{proxy_port}"
        server_proc, proxy_proc = psutil.Process(server.pid), psutil.Process(capture.pid)
        send(proxied_url, 4, 8, 2)  # both warm
        send(direct_url, 4, 8, 2)
        rows: dict[str, list[float]] = {k: [] for k in ("ttft50", "ttft99", "e2e50", "e2e99", "proxy", "server")}
        for _ in range(args.rounds):
            before = cpu(server_proc)
            direct = send(direct_url, args.requests, args.tokens, args.concurrency)
            server_direct = cpu(server_proc) - before
            before_proxy = cpu(proxy_proc)
            proxied = send(proxied_url, args.requests, args.tokens, args.concurrency)
            proxy_cpu = cpu(proxy_proc) - before_proxy
            tokens = sum(r.output_tokens or 0 for r in proxied) / 1000
            for name, q in (("50", 0.50), ("99", 0.99)):
                rows["ttft" + name].append(pct([r.ttft or 0 for r in proxied], q) - pct([r.ttft or 0 for r in direct], q))
                rows["e2e" + name].append(pct([r.latency or 0 for r in proxied], q) - pct([r.latency or 0 for r in direct], q))
            rows["proxy"].append(proxy_cpu * 1000 / tokens)
            rows["server"].append(server_direct * 1000 / tokens)
        capture.send_signal(signal.SIGINT)
        capture.wait(30)
    server.terminate()
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(
        f"{args.requests} requests x {args.tokens} tokens at concurrency {args.concurrency}, "
        f"{args.rounds} rounds, server pace {args.pace_ms:g} ms/token (medians of the rounds)"
    )
    print(f"  added ttft      p50 {med['ttft50'] * 1000:+.2f} ms   p99 {med['ttft99'] * 1000:+.2f} ms")
    print(f"  added e2e       p50 {med['e2e50'] * 1000:+.2f} ms   p99 {med['e2e99'] * 1000:+.2f} ms")
    print(
        f"  proxy cpu       {med['proxy']:.1f} ms / 1k tokens   (the server's own: {med['server']:.1f} ms; "
        f"ratio {med['proxy'] / med['server']:.2f}x)"
    )
    if args.figures:
        prefix = f"capture.{args.figures}"
        figure(f"{prefix}.ttft50", f"{med['ttft50'] * 1000:+.1f} ms")
        figure(f"{prefix}.ttft99", f"{med['ttft99'] * 1000:+.0f} ms")
        figure(f"{prefix}.e2e50", f"{med['e2e50'] * 1000:+.0f} ms")
        figure(f"{prefix}.proxy", f"{med['proxy']:.0f} ms")
        per_token = med["proxy"] / 1000
        figure(f"{prefix}.per_token", f"{per_token:.2f} ms")
        figure(f"{prefix}.at_500", f"~{per_token * 500 / 10:.0f}%")  # 500 tokens/s: ms a second over 1,000 ms, in %


if __name__ == "__main__":
    main()
