"""TTFT and TPOT are observed when a request finishes: the poller's quantiles cover a 30 s
window, say so, and a window without a finished request reads `idle` only when nothing decodes."""

from __future__ import annotations

from rigctl.engine.poller import LATENCY_WINDOW, Endpoint, EnginePoller
from rigctl.engine.report import latency_line
from tests.engine.test_http_get import length_framed, scripted
from tests.engine.test_metrics import FakeVllm
from tests.support import present


def test_quantiles_cover_the_window_and_say_so() -> None:
    vllm = FakeVllm()
    l = vllm.l()
    vllm.gen.labels(**l).inc(100)
    first = vllm.text()
    for value in (0.02, 0.03, 0.04):  # three requests finish in the first 10 s
        vllm.tpot.labels(**l).observe(value)
    vllm.gen.labels(**l).inc(300)
    second = vllm.text()
    vllm.running.labels(**l).set(4)
    vllm.gen.labels(**l).inc(400)  # decoding goes on; nobody finishes
    third = vllm.text()
    vllm.running.labels(**l).set(0)
    fourth = vllm.text()
    health = length_framed(b"")
    models = length_framed(b'{"data": [{"id": "m", "max_model_len": 8}]}')
    answers = [
        health,
        models,
        length_framed(first.encode()),
        length_framed(second.encode()),
        length_framed(third.encode()),
        health,
        models,
        length_framed(third.encode()),
        length_framed(fourth.encode()),
    ]
    stamps = iter([0.0, 10.0, 20.0, 15.0 + LATENCY_WINDOW, 16.0 + LATENCY_WINDOW])
    poller = EnginePoller(clock=lambda: next(stamps))
    with scripted(answers) as server:
        target = Endpoint(f"http://127.0.0.1:{server.port}", "p")
        poller.poll(target)
        at_10 = present(poller.poll(target).figures)
        at_20 = present(poller.poll(target).figures)
        poller._tick = 0  # the next poll probes /health again, as every fifth does
        late = present(poller.poll(target).figures)
        idle = present(poller.poll(target).figures)
    assert at_10.latency["tpot"].count == 3 and at_10.latency_seconds == 10.0
    assert at_20.latency["tpot"].count == 3 and at_20.latency_seconds == 20.0  # the window still holds them
    assert "TPOT p50 31 ms p95 48 ms" in latency_line(at_20) and latency_line(at_20).endswith("(over 20 s)")
    assert late.latency_seconds == 35.0  # from the newest scrape at least 30 s back: the finished three are out
    assert late.latency["tpot"].count == 0 and late.decoding
    assert "TPOT none finished in 35 s" in latency_line(late)  # decoding: not "idle"
    assert not idle.decoding and "TPOT idle" in latency_line(idle)
