"""The load generator against a real streaming server on 127.0.0.1 whose timing it controls:
TTFT, ITL and e2e as vllm bench serve measures them, usage counts, the concurrency cap,
arrival times, failures kept (not dropped), and a stop that cancels what is in flight."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from rigctl.bench.loadgen import LoadTarget, RequestOptions, run_load
from rigctl.bench.workload import Prompt


class Streamer(ThreadingHTTPServer):
    daemon_threads = True
    first_delay = 0.15
    gap = 0.02
    active = 0
    peak = 0
    bodies: list[dict[str, Any]]
    lock: threading.Lock


class Handler(BaseHTTPRequestHandler):
    server: Streamer
    protocol_version = "HTTP/1.1"
    counted = False

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with self.server.lock:
            self.server.bodies.append(body)
            self.server.active += 1
            self.server.peak = max(self.server.peak, self.server.active)
        self.counted = True
        try:
            self._answer(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped listening (the stop test): nothing to answer
        finally:
            self._ended()

    def _ended(self) -> None:
        """The request leaves the count before its last byte goes out: once the client has read that
        byte it may send the next one, and this thread may not yet have run again to count down
        (a loaded machine showed a peak of 3 under a cap of 2 that the client had kept)."""
        if self.counted:
            self.counted = False
            with self.server.lock:
                self.server.active -= 1

    def _answer(self, body: dict[str, Any]) -> None:
        prompt = body["prompt"]
        if prompt == "split":
            self._split(body)
            return
        if prompt == "fail":
            data = b'{"error": {"message": "boom"}}'
            self._ended()
            self.send_response(500)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        time.sleep(self.server.first_delay)
        for n in range(body["max_tokens"]):
            if n:
                time.sleep(self.server.gap)
            if prompt == "drop" and n == 2:
                self._ended()
                return  # the connection closes mid-stream, no [DONE]
            chunk = {"choices": [{"index": 0, "text": " t", "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        if body.get("stream_options", {}).get("include_usage"):
            usage = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": body["max_tokens"]}}
            self.wfile.write(f"data: {json.dumps(usage)}\n\n".encode())
        self._ended()
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True

    def _split(self, body: dict[str, Any]) -> None:
        """The stream as one byte string written in 3-byte pieces, CRLF line ends and a comment
        line: events cut anywhere must be read as the same events."""
        events = [json.dumps({"choices": [{"index": 0, "text": " t"}]}) for _ in range(body["max_tokens"])]
        events.append(json.dumps({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": body["max_tokens"]}}))
        stream = (": keep-alive\r\n\r\n" + "".join(f"data: {e}\r\n\r\n" for e in events) + "data: [DONE]\r\n\r\n").encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for at in range(0, len(stream), 3):
            if at + 3 >= len(stream):
                self._ended()
            self.wfile.write(stream[at : at + 3])
            self.wfile.flush()
        self.close_connection = True


@pytest.fixture
def streamer() -> Iterator[Streamer]:
    server = Streamer(("127.0.0.1", 0), Handler)
    server.bodies, server.lock = [], threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def target(server: Streamer) -> LoadTarget:
    return LoadTarget(f"http://127.0.0.1:{server.server_address[1]}", "m")


def test_times_and_counts_each_request_as_vllm_bench_serve_does(streamer: Streamer) -> None:
    schedule = [(Prompt(i, f"p{i}", 6), 0.0) for i in range(3)]
    results, elapsed = run_load(target(streamer), schedule, concurrency=3)
    assert [r.index for r in results] and all(r.success and not r.error for r in results)
    for r in results:
        # only what the server's sleeps guarantee: a loaded machine may read two chunks at once
        # (a gap near zero) or late, never early
        assert r.ttft is not None and r.ttft >= 0.15
        assert len(r.itl) == 5 and all(gap >= 0 for gap in r.itl)
        assert r.latency is not None and r.latency >= 0.15 + 5 * 0.02
        assert r.latency == pytest.approx(r.ttft + sum(r.itl))  # ends at the last chunk, as vLLM's
        assert (r.prompt_len, r.output_tokens, r.usage_reported, r.chunks) == (7, 6, True, 6)
    assert elapsed >= max(r.latency or 0 for r in results)
    body = streamer.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "m" and body["temperature"] == 0.0 and body["ignore_eos"] is True


def test_the_concurrency_cap_holds_and_the_queue_is_timed(streamer: Streamer) -> None:
    streamer.first_delay = 0.1
    schedule = [(Prompt(i, f"p{i}", 3), 0.0) for i in range(8)]
    results, _ = run_load(target(streamer), schedule, concurrency=2)
    assert streamer.peak == 2 and len(results) == 8 and all(r.success for r in results)
    # the first two went out before any request had ended; the last waited its three rounds
    # (each request takes at least the server's 0.1 s + 2 gaps): lower bounds, which no load breaks
    first_two = sorted(results, key=lambda r: r.start_time)[:2]
    ends = [r.start_time + (r.latency or 0) for r in results]
    assert all(r.start_time < min(ends) for r in first_two)
    assert max(r.client_queue_time for r in results) >= 3 * 0.14


def test_interval_arrivals_are_kept(streamer: Streamer) -> None:
    streamer.first_delay = 0.0
    schedule = [(Prompt(i, f"p{i}", 2), i * 0.3) for i in range(3)]
    results, _ = run_load(target(streamer), schedule, concurrency=4)
    # never early against the run's own clock (the first request may itself be late, so gaps
    # between starts are no promise); asyncio may wake within its clock resolution of the due time
    assert [r.index for r in results] == [0, 1, 2]
    assert all(r.start_time >= due - 0.005 for r, (_, due) in zip(results, schedule, strict=True))


def test_failures_are_kept_with_what_went_wrong(streamer: Streamer) -> None:
    schedule = [(Prompt(0, "fail", 4), 0.0), (Prompt(1, "drop", 5), 0.0), (Prompt(2, "ok", 3), 0.0)]
    results = {r.index: r for r in run_load(target(streamer), schedule, concurrency=3)[0]}
    assert not results[0].success and results[0].error.startswith("HTTP 500: ")
    assert not results[1].success and results[1].error == "the stream ended before [DONE]"
    assert results[1].chunks == 2 and results[1].output_tokens == 2  # no usage: the chunks are what came
    assert results[2].success


def test_a_server_that_is_not_there_fails_every_request_clearly() -> None:
    results, _ = run_load(
        LoadTarget("http://127.0.0.1:9", "m"), [(Prompt(0, "p", 3), 0.0)], concurrency=1, options=RequestOptions(timeout_s=5)
    )
    assert not results[0].success and results[0].error.startswith("connection failed")


def test_a_duration_workload_stops_sending_at_its_end(streamer: Streamer) -> None:
    streamer.first_delay = 0.05

    def endless() -> Iterator[tuple[Prompt, float]]:
        n = 0
        while True:
            yield Prompt(n, f"p{n}", 2), 0.0
            n += 1

    results, elapsed = run_load(target(streamer), endless(), concurrency=2, duration_s=0.6)
    # at most 2 at a time, each at least 0.07 s: a run that stopped sending at 0.6 s sent fewer than 40
    assert 1 <= len(results) < 40 and all(r.success for r in results)
    assert elapsed >= 0.6


def test_stop_cancels_what_is_in_flight_and_keeps_it_as_failed(streamer: Streamer) -> None:
    streamer.gap = 0.2
    stop = threading.Event()
    threading.Timer(0.4, stop.set).start()
    results, _ = run_load(target(streamer), [(Prompt(i, f"p{i}", 50), 0.0) for i in range(4)], concurrency=2, stop=stop)
    # each request takes 10 s: none finished, so the stop cut them rather than waiting
    assert results and all(not r.success and r.error == "stopped before it finished" for r in results)


def test_events_cut_at_any_byte_are_read_whole(streamer: Streamer) -> None:
    results, _ = run_load(target(streamer), [(Prompt(0, "split", 9), 0.0)], concurrency=1)
    r = results[0]
    assert r.success and not r.error and (r.chunks, r.output_tokens, r.prompt_len) == (9, 9, 7)
    assert len(r.itl) == 8
