"""The streaming load generator: an async httpx client on /v1/completions.

Per request it records what `vllm bench serve` records (and with its definitions, so the
figures compare): the time to the first chunk that carries a choice (TTFT), every gap
between such chunks (ITL, one per chunk: with speculative decoding a chunk can hold
several tokens), the end-to-end latency, the prompt and output tokens from the server's
`usage` (stream_options.include_usage), the time spent waiting on the concurrency cap,
and the error if it failed. A failed request is kept, never dropped.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rigctl.bench.workload import Prompt

if TYPE_CHECKING:
    import httpx


@dataclass(frozen=True)
class LoadTarget:
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)


@dataclass
class RequestResult:
    index: int
    start_time: float  # seconds after the run began, when it was sent
    client_queue_time: float  # seconds it waited for a free slot under the concurrency cap
    ttft: float | None = None
    itl: list[float] = field(default_factory=list)
    latency: float | None = None  # end to end, from sending to the last chunk with a choice (as vllm bench serve)
    prompt_len: int | None = None  # usage.prompt_tokens
    output_tokens: int | None = None  # usage.completion_tokens (chunks with a choice when usage is missing)
    usage_reported: bool = False
    success: bool = False
    error: str = ""
    chunks: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # full precision: a kept run must summarise again to the same figures


@dataclass(frozen=True)
class RequestOptions:
    temperature: float = 0.0
    ignore_eos: bool = True
    timeout_s: float = 600.0


def _describe(exc: BaseException) -> str:
    import httpx

    if isinstance(exc, httpx.ConnectError):
        return f"connection failed: {exc}"
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _events(response: httpx.Response) -> AsyncIterator[bytes]:
    """The `data:` lines of an SSE stream, as bytes. Split by hand: httpx's aiter_lines decodes
    and re-splits every chunk, which doubled the client's CPU per token
    (benchmarks/bench_loadgen.py); tests/bench/test_loadgen.py holds this to the same events."""
    pending = b""
    async for chunk in response.aiter_bytes():
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.startswith(b"data:"):
                yield line
    if pending.startswith(b"data:"):
        yield pending


async def _one(
    client: httpx.AsyncClient, target: LoadTarget, prompt: Prompt, options: RequestOptions, result: RequestResult
) -> None:
    import httpx

    if prompt.body is not None:  # the owner's request as captured: streamed, so TTFT and ITL can be measured
        body = {**prompt.body, "model": target.model, "stream": True, "stream_options": {"include_usage": True}}
    else:
        body = {
            "model": target.model,
            "prompt": prompt.text,
            "max_tokens": prompt.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": options.temperature,
            "ignore_eos": options.ignore_eos,
        }
    sent = time.perf_counter()
    last = sent
    try:
        async with client.stream("POST", prompt.endpoint, json=body) as response:
            if response.status_code != 200:
                text = (await response.aread()).decode(errors="replace")
                result.error = f"HTTP {response.status_code}: {text[:300]}"
                return
            done = False
            async for line in _events(response):
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    done = True
                    break
                data = json.loads(payload)
                now = time.perf_counter()
                if data.get("choices"):
                    if result.ttft is None:
                        result.ttft = now - sent
                    else:
                        result.itl.append(now - last)
                    last = now
                    result.chunks += 1
                usage = data.get("usage")
                if usage:
                    result.prompt_len = usage.get("prompt_tokens")
                    result.output_tokens = usage.get("completion_tokens")
                    result.usage_reported = True
                if "error" in data:
                    result.error = str(data["error"].get("message") if isinstance(data["error"], dict) else data["error"])[:300]
            # vllm bench serve's definition: the request ends at its last chunk with a choice (the
            # trailing usage chunk and [DONE] carry no token)
            result.latency = last - sent if result.chunks else time.perf_counter() - sent
            if not result.usage_reported:
                result.output_tokens = result.chunks
            if not done and not result.error:
                result.error = "the stream ended before [DONE]"
            result.success = not result.error and result.ttft is not None
    except (httpx.HTTPError, OSError, ValueError) as exc:
        result.error = _describe(exc)
        result.latency = time.perf_counter() - sent


async def _drive(
    target: LoadTarget,
    schedule: Iterable[tuple[Prompt, float]],
    concurrency: int,
    options: RequestOptions,
    duration_s: float | None,
    on_result: Callable[[RequestResult], None],
    stop: threading.Event,
) -> tuple[list[RequestResult], float]:
    # imported here: httpx imports its CLI (and Rich with it, where click is installed) at
    # import time, which `rigctl bench list` and every other headless command must not pay for
    import httpx

    headers = {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    timeout = httpx.Timeout(options.timeout_s, connect=10.0)
    in_flight = [0]
    freed = asyncio.Event()
    results: list[RequestResult] = []
    tasks: set[asyncio.Task[None]] = set()
    async with httpx.AsyncClient(
        base_url=target.base_url, headers=headers, limits=limits, timeout=timeout, trust_env=False
    ) as client:
        began = time.perf_counter()

        async def run(prompt: Prompt, due: float) -> None:
            try:
                started = time.perf_counter()
                result = RequestResult(prompt.index, started - began, max(0.0, started - began - due))
                results.append(result)
                await _one(client, target, prompt, options, result)
            finally:
                in_flight[0] -= 1
                freed.set()
            on_result(result)

        for prompt, due in schedule:
            if _over(stop, duration_s, began):
                break
            wait = began + due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            while in_flight[0] >= concurrency and not _over(stop, duration_s, began):  # the cap is the queue
                freed.clear()
                try:
                    await asyncio.wait_for(freed.wait(), 0.2)
                except TimeoutError:
                    continue
            if _over(stop, duration_s, began):
                break
            in_flight[0] += 1
            task = asyncio.create_task(run(prompt, due))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        while tasks and not stop.is_set():
            await asyncio.wait(tasks, timeout=0.2)
        left = list(tasks)
        for task in left:
            task.cancel()
        await asyncio.gather(*left, return_exceptions=True)
        elapsed = time.perf_counter() - began
    results.sort(key=lambda r: r.start_time)
    for result in results:
        if not result.success and not result.error:
            result.error = "stopped before it finished"
    return results, elapsed


def _over(stop: threading.Event, duration_s: float | None, began: float) -> bool:
    return stop.is_set() or (duration_s is not None and time.perf_counter() - began >= duration_s)


def run_load(
    target: LoadTarget,
    schedule: Iterable[tuple[Prompt, float]],
    concurrency: int,
    options: RequestOptions = RequestOptions(),
    duration_s: float | None = None,
    on_result: Callable[[RequestResult], None] = lambda result: None,
    stop: threading.Event | None = None,
) -> tuple[list[RequestResult], float]:
    """Send the schedule's requests (each due at its offset, at most `concurrency` at a time)
    and wait for all of them; (results in the order sent, seconds from the first send to the
    last answer). `stop` ends it early: what is in flight is cancelled and kept as failed."""
    return asyncio.run(_drive(target, schedule, concurrency, options, duration_s, on_result, stop or threading.Event()))


def schedule(prompts: Callable[[int], Prompt], due: Iterator[float]) -> Iterator[tuple[Prompt, float]]:
    for index, offset in enumerate(due):
        yield prompts(index), offset
