"""rigctl bench's load generator (rigctl/bench/loadgen.py, async httpx) against two peers, so it
is never the bottleneck it measures.

A streaming server in its own process on 127.0.0.1 answers /v1/completions the way vLLM
does (HTTP/1.1 chunked, one `data:` event per token, a usage event, `[DONE]`) as fast as it
can write. Three clients drive the same requests at the same concurrency, interleaved:

  rigctl    run_load(): what `rigctl bench` uses (httpx.AsyncClient, per-chunk timing, usage)
  aiohttp   an aiohttp streaming reader with the same per-chunk timing: what `vllm bench
            serve` is built on (skipped where aiohttp is not installed: pip install -e '.[bench]')
  floor     raw asyncio streams counting events: the least a Python client can do

  cpu ms / 1k tokens   the client process's CPU per 1,000 streamed tokens (median of the rounds)
  tokens/s             streamed tokens per wall second at that concurrency, with the server
                       on the other core: the highest rate this machine lets the client see

Run:  python benchmarks/bench_loadgen.py [--rounds 3] [--requests 64] [--tokens 256] [--concurrency 8]
Prints figures and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/: figures
from figures import figure

from rigctl.bench.loadgen import LoadTarget, RequestOptions, run_load, schedule
from rigctl.bench.workload import Prompt

SERVER = r"""
import asyncio, json, sys

CHUNK = json.dumps({"id": "x", "object": "text_completion", "model": "m",
                    "choices": [{"index": 0, "text": " tok", "finish_reason": None}]})

def frame(payload: str) -> bytes:
    data = f"data: {payload}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(data), data)

EVENT = frame(CHUNK)

async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = json.loads(await reader.readexactly(length))
            tokens = int(body["max_tokens"])
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n")
            for _ in range(tokens):
                writer.write(EVENT)
                await writer.drain()  # one write per token, as an engine streams
            usage = {"id": "x", "choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": tokens}}
            writer.write(frame(json.dumps(usage)) + frame("[DONE]") + b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()

async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()

asyncio.run(main())
"""


def body(tokens: int, index: int) -> dict[str, Any]:
    return {"model": "m", "prompt": f"p{index}", "max_tokens": tokens, "stream": True, "stream_options": {"include_usage": True}}


def rigctl_client(port: int, requests: int, tokens: int, concurrency: int) -> int:
    prompts = schedule(lambda i: Prompt(i, f"p{i}", tokens), iter([0.0] * requests))
    results, _ = run_load(LoadTarget(f"http://127.0.0.1:{port}", "m"), prompts, concurrency, RequestOptions())
    assert all(r.success for r in results), [r.error for r in results if not r.success][:3]
    return sum(r.output_tokens or 0 for r in results)


def aiohttp_client(port: int, requests: int, tokens: int, concurrency: int) -> int:
    import aiohttp

    async def drive() -> int:
        cap = asyncio.Semaphore(concurrency)
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def one(index: int) -> int:
                async with cap:
                    sent = time.perf_counter()
                    last, gaps, count = sent, [], 0
                    async with session.post(f"http://127.0.0.1:{port}/v1/completions", json=body(tokens, index)) as response:
                        async for raw in response.content:
                            line = raw.strip()
                            if not line.startswith(b"data:") or line == b"data: [DONE]":
                                continue
                            data = json.loads(line[5:])
                            if data.get("choices"):
                                now = time.perf_counter()
                                gaps.append(now - last)
                                last = now
                                count += 1
                    return count

            return sum(await asyncio.gather(*(one(i) for i in range(requests))))

    return asyncio.run(drive())


def floor_client(port: int, requests: int, tokens: int, concurrency: int) -> int:
    async def drive() -> int:
        queue: asyncio.Queue[int] = asyncio.Queue()
        for index in range(requests):
            queue.put_nowait(index)

        async def worker() -> int:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            seen = 0
            while not queue.empty():
                data = json.dumps(body(tokens, queue.get_nowait())).encode()
                writer.write(
                    b"POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(data), data)
                )
                await reader.readuntil(b"\r\n\r\n")
                while True:
                    size = int((await reader.readline()).strip(), 16)
                    if size == 0:
                        await reader.readline()
                        break
                    chunk = await reader.readexactly(size + 2)
                    if chunk.startswith(b"data: {") and b'"choices": [{' in chunk:
                        seen += 1
            writer.close()
            return seen

        return sum(await asyncio.gather(*(worker() for _ in range(concurrency))))

    return asyncio.run(drive())


CLIENTS = {"rigctl": rigctl_client, "aiohttp": aiohttp_client, "floor": floor_client}


def measure(name: str, port: int, args: argparse.Namespace) -> tuple[float, float]:
    """(client CPU ms per 1,000 tokens, tokens per wall second) for one run in a fresh process,
    so one client's garbage and imports do not land on the next."""
    code = (
        f"import sys, time; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r}); "
        f"import bench_loadgen as b; c0, w0 = time.process_time(), time.perf_counter(); "
        f"n = b.CLIENTS[{name!r}]({port}, {args.requests}, {args.tokens}, {args.concurrency}); "
        f"print(n, time.process_time() - c0, time.perf_counter() - w0)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    tokens, cpu, wall = int(out[0]), float(out[1]), float(out[2])
    assert tokens == args.requests * args.tokens, (name, tokens)
    return cpu / tokens * 1e6, tokens / wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    names = ["rigctl", "floor"]
    try:
        import aiohttp  # noqa: F401

        names.insert(1, "aiohttp")
    except ImportError:
        print("aiohttp not installed: its column is skipped (pip install -e '.[bench]')")
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
        for _ in range(args.rounds):
            for name in names:  # interleaved, so a noisy minute lands on every client
                figures[name].append(measure(name, port, args))
    finally:
        server.kill()
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {args.requests} requests x {args.tokens} "
        f"tokens at {args.concurrency} concurrent, {args.rounds} rounds, {time.strftime('%Y-%m-%d %H:%M')}"
    )
    floor_cpu = statistics.median(cpu for cpu, _ in figures["floor"])
    for name in names:
        cpu = statistics.median(c for c, _ in figures[name])
        rate = statistics.median(r for _, r in figures[name])
        print(f"{name:8} {cpu:6.1f} ms CPU per 1,000 tokens ({cpu / floor_cpu:.2f}x the floor), {rate:8,.0f} streamed tokens/s")
        figure(f"loadgen.{name}.cpu", f"{cpu:.1f} ms" if cpu < 10 else f"{cpu:.0f} ms")
        figure(f"loadgen.{name}.rate", f"{round(rate, -2):,.0f}/s")


if __name__ == "__main__":
    main()
