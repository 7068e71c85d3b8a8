"""The simulator teaches the owners' lessons (../shared/reference/owners/MEASURED.md): AutoRound's
W4A8 prefills ~1.39x AWQ and decodes ~0.96x, FP8 decodes ~0.71x, MTP on their 3090s decodes
slower even at 70.8% acceptance, async scheduling gains ~26% at 6 concurrent short requests and
nothing while long prompts prefill. Measured on the engine itself, stepped on a virtual clock."""

from __future__ import annotations

import random

import pytest

from rigctl.sim.engine import ACCEPTANCE, EngineReplica, Request, Speed, prompt_blocks
from rigctl.sim.speeds import build_factors, build_of
from rigctl.sim.stats import Stats

BASE_DECODE, BASE_PREFILL = 60.0, 7200.0
DT = 0.002


def replica(speed: Speed, seqs: int = 8) -> EngineReplica:
    return EngineReplica(0, 10**7, 16, seqs, 8192, speed, Stats(1, 131072, spec=speed.spec_tokens > 0), random.Random(7))


def submit(engine: EngineReplica, prompt_tokens: int, max_tokens: int, n: int) -> list[Request]:
    out = []
    for i in range(n):
        tokens, blocks = prompt_blocks(f"request {i} " + "x" * (prompt_tokens * 4), 16)
        request = Request(f"r{i}", 0, tokens, blocks, max_tokens, 0.0)
        engine.waiting.append(request)
        out.append(request)
    return out


def run(engine: EngineReplica, requests: list[Request], limit_s: float = 600.0) -> float:
    now = 0.0
    while not all(r.done for r in requests):
        now += DT
        engine.step(now, DT)
        assert now < limit_s
    return now


def build_speed(quantization: str, model: str, **extra: object) -> Speed:
    prefill, decode = build_factors(quantization, model)
    return Speed(decode_tps=BASE_DECODE * decode, prefill_tps=BASE_PREFILL * prefill, **extra)  # type: ignore[arg-type]


def decode_rate(speed: Speed, tokens: int = 600) -> float:
    engine = replica(speed, seqs=1)
    [request] = submit(engine, 8, tokens, 1)
    took = run(engine, [request])
    assert request.first_token_at is not None and request.last_token_at is not None
    return (tokens - 1) / (request.last_token_at - request.first_token_at) if took else 0.0


def ttft(speed: Speed, prompt: int) -> float:
    engine = replica(speed, seqs=1)
    [request] = submit(engine, prompt, 1, 1)
    run(engine, [request])
    assert request.first_token_at is not None
    return request.first_token_at


@pytest.mark.parametrize(
    "quantization, model, build",
    [
        ("awq_marlin", "Qwen/Qwen3.6-27B-AWQ", "awq"),
        (None, "Intel/Qwen3.6-27B-int4-AutoRound-W4A8", "w4a8"),
        ("fp8", "Qwen/Qwen3.6-27B-FP8", "fp8"),
        (None, "Qwen/Qwen3.6-27B-FP8", "fp8"),
        (None, "Qwen/Qwen3.6-27B", None),
    ],
)
def test_a_launch_is_the_build_owners_measured(quantization: str | None, model: str, build: str | None) -> None:
    assert build_of(quantization, model) == build


def test_builds_prefill_and_decode_at_the_owners_ratios() -> None:
    awq, w4a8 = build_speed("awq_marlin", "x-AWQ"), build_speed("auto-round", "x-W4A8")
    fp8 = build_speed("fp8", "x-FP8")
    long_prompt = 24_000
    assert ttft(awq, long_prompt) / ttft(w4a8, long_prompt) == pytest.approx(81.56 / 58.64, rel=0.03)
    assert decode_rate(w4a8) / decode_rate(awq) == pytest.approx(58.56 / 60.90, rel=0.03)
    assert decode_rate(fp8) / decode_rate(awq) == pytest.approx(43.24 / 60.90, rel=0.03)


def test_mtp_decodes_slower_on_the_owners_3090s_at_their_acceptance() -> None:
    plain = decode_rate(Speed(BASE_DECODE, BASE_PREFILL), tokens=3000)
    # depth 1 at the owners' 70.8% acceptance: 67.64 -> 51.53 tok/s
    depth1 = decode_rate(Speed(BASE_DECODE, BASE_PREFILL, spec_tokens=1, acceptance_scale=0.708 / ACCEPTANCE[0]), tokens=3000)
    assert depth1 / plain == pytest.approx(51.53 / 67.64, rel=0.06)
    depth4 = decode_rate(Speed(BASE_DECODE, BASE_PREFILL, spec_tokens=4, acceptance_scale=0.6), tokens=3000)
    assert depth4 < plain  # "slower both times"


def aggregate(speed: Speed, prompt: int, n: int, tokens: int) -> float:
    engine = replica(speed, seqs=n)
    requests = submit(engine, prompt, tokens, n)
    return n * tokens / run(engine, requests)


def test_async_scheduling_gains_a_quarter_at_six_short_requests_and_nothing_on_long_prompts() -> None:
    sync, async_ = Speed(BASE_DECODE, BASE_PREFILL), Speed(BASE_DECODE, BASE_PREFILL, async_scheduling=True)
    short = aggregate(async_, 200, 6, 400) / aggregate(sync, 200, 6, 400)
    assert short == pytest.approx(210.1 / 166.8, rel=0.04)
    # six prompts of 40k tokens prefill one after the other: the steps with a prefill gain nothing
    long = ttft(async_, 40_000) / ttft(sync, 40_000)
    assert long == pytest.approx(1.0, abs=0.01)


def tpot_median(engine: EngineReplica, requests: list[Request], arrivals: list[float] | None = None) -> float:
    """The median time per output token of `requests`, submitted at `arrivals` (all at 0: at once)."""
    pending = list(zip(arrivals or [0.0] * len(requests), requests, strict=True))
    engine.waiting.clear()
    now = 0.0
    while not all(r.done for r in requests):
        while pending and pending[0][0] <= now:
            arrival, request = pending.pop(0)
            request.arrival = arrival
            engine.waiting.append(request)
        now += DT
        engine.step(now, DT)
        assert now < 3600
    per_token = sorted(
        (r.last_token_at - r.first_token_at) / (r.generated - 1)
        for r in requests
        if r.last_token_at is not None and r.first_token_at is not None
    )
    return per_token[len(per_token) // 2]


def test_long_prompts_in_flight_hold_every_decoding_stream() -> None:
    """The 3090 owner: three 40k-token prompts in flight at once, median TPOT 385 ms, against 18 ms
    for one stream alone; spread-out 8k prompts, 24 ms. Each step that carries a prefill chunk
    lasts the chunk's prefill too, so the decoders wait on it: an order of magnitude with long
    prompts at once, and close to alone when they are spread out. (Short answers: a stream that
    outlives the others' prefills decodes the rest of its answer alone.)"""
    speed = Speed(decode_tps=BASE_DECODE, prefill_tps=BASE_PREFILL)

    def fresh() -> EngineReplica:
        return EngineReplica(0, 10**7, 16, 8, 2048, speed, Stats(1, 131072, spec=False), random.Random(7))

    def measured(prompt_tokens: int, arrivals: list[float]) -> float:
        engine = fresh()
        return tpot_median(engine, submit(engine, prompt_tokens, 32, len(arrivals)), arrivals)

    lone = measured(8, [0.0])
    crowded = measured(40_000, [0.0, 0.0, 0.0])
    spread = measured(8_000, [0.0, 6.0, 12.0])
    assert crowded / lone >= 10, f"three 40k prompts at once: TPOT x{crowded / lone:.1f} alone's (the owner: x21)"
    assert spread / lone <= 1.5, f"spread-out 8k prompts: TPOT x{spread / lone:.2f} alone's (the owner: x1.33)"
