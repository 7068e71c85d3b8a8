"""Arm figures by hand, with vllm bench serve's definitions; the cold-cache proof read from a
real vLLM's /metrics; the workload's prompts and arrivals."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigctl.bench.loadgen import RequestResult
from rigctl.bench.plan_file import parse_plan
from rigctl.bench.summary import GpuReading, Sample, arm_figures, heat, percentile, request_figures
from rigctl.bench.workload import CHARS_PER_TOKEN, Prompts, arrivals
from rigctl.engine.coldcache import cold_check
from rigctl.engine.metrics import snapshot
from rigctl.engine.prom import parse
from rigctl.vllm.metric_names import SNAPSHOT_NAMES

FIXTURES = Path(__file__).parent.parent / "fixtures" / "vllm-cpu"


def result(
    index: int, ttft: float, latency: float, out: int, prompt: int = 100, ok: bool = True, itl: list[float] | None = None
) -> RequestResult:
    return RequestResult(
        index,
        0.0,
        0.0,
        ttft=ttft,
        itl=itl or [],
        latency=latency,
        prompt_len=prompt,
        output_tokens=out,
        usage_reported=True,
        success=ok,
        error="" if ok else "HTTP 500",
    )


def test_percentiles_interpolate_between_ranks_as_numpy_does() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 95) == pytest.approx(4.0 + 0.8 * 6.0)  # rank 3.8
    assert percentile([7.0], 99) == 7.0 and percentile([], 50) is None


def test_request_figures_follow_vllm_bench_serve() -> None:
    results = [
        result(0, 0.5, 2.5, 21, itl=[0.1] * 20),
        result(1, 1.0, 5.0, 41, itl=[0.1] * 40),
        result(2, 0.2, 0.2, 1),
        result(3, 9.0, 9.0, 0, ok=False),
    ]
    f = request_figures(results, elapsed=10.0)
    assert f["output_tok_per_s"] == pytest.approx(63 / 10.0)  # the failed request counts for nothing
    assert f["total_tok_per_s"] == pytest.approx((63 + 300) / 10.0)
    assert f["request_per_s"] == pytest.approx(0.3)
    assert f["ttft_p50_s"] == pytest.approx(0.5) and f["ttft_mean_s"] == pytest.approx(1.7 / 3)
    # TPOT per request, only where more than one token came out: (2.5-0.5)/20 and (5-1)/40
    assert f["tpot_p50_s"] == pytest.approx(0.1) and f["tpot_mean_s"] == pytest.approx(0.1)
    assert f["decode_tok_per_s_stream"] == pytest.approx(10.0) and f["decode_tok_per_s_worst"] == pytest.approx(10.0)
    assert f["itl_p50_s"] == pytest.approx(0.1)  # 60 gaps pooled
    assert f["e2e_p95_s"] == pytest.approx(percentile([2.5, 5.0, 0.2], 95))


def test_cold_and_warm_caches_from_a_real_vllm_scrape() -> None:
    def scrape(name: str):  # type: ignore[no-untyped-def]
        return snapshot(parse((FIXTURES / name).read_text(), names=SNAPSHOT_NAMES), 0.0)

    cold = cold_check(scrape("good-eager.metrics-before.prom"))
    assert cold.cold is True and cold.describe().startswith("cold:")
    warm = cold_check(scrape("good-eager.metrics-after.prom"))  # after 34 prompt tokens were served
    assert warm.cold is False and warm.queries == 34.0
    assert warm.describe().startswith("WARM: after the restart the engine had already seen 34 prompt tokens")
    # a scrape without the counters proves nothing either way
    bare = snapshot(parse('vllm:num_requests_running{engine="0"} 0\n', names=SNAPSHOT_NAMES), 0.0)
    assert cold_check(bare).cold is None and cold_check(None).cold is None


def test_hits_in_a_connectors_cache_that_outlived_the_restart_are_warm() -> None:
    text = (FIXTURES / "good-eager.metrics-before.prom").read_text()
    restart = snapshot(parse(text, names=SNAPSHOT_NAMES), 0.0)
    later = snapshot(
        parse(
            text.replace(
                'vllm:external_prefix_cache_hits_total{engine="0",model_name="/tmp/tiny-model"} 0.0',
                'vllm:external_prefix_cache_hits_total{engine="0",model_name="/tmp/tiny-model"} 512.0',
            ),
            names=SNAPSHOT_NAMES,
        ),
        0.0,
    )
    check = cold_check(restart, restart, later)
    assert check.cold is False and check.external_hits == 512.0 and "external KV cache" in check.describe()


def test_energy_from_the_counters_else_from_power() -> None:
    samples = [
        Sample(0.0, 0.1, 1, 0, (GpuReading(0, 40, 300.0, 1000.0), GpuReading(1, 42, 300.0, 5000.0))),
        Sample(2.0, 0.5, 1, 0, (GpuReading(0, 47, 310.0, 1600.0), GpuReading(1, 45, 290.0, 5640.0))),
    ]
    h = heat(samples)
    assert (h.start_c, h.peak_c, h.energy_j, h.power_w) == (42, 47, 1240.0, 620.0)
    without_counter = [
        Sample(0.0, None, None, None, (GpuReading(0, 40, 200.0, None),)),
        Sample(4.0, None, None, None, (GpuReading(0, 41, 300.0, None),)),
    ]
    assert heat(without_counter).energy_j == pytest.approx(250.0 * 4)
    figures = arm_figures([result(0, 0.5, 2.5, 31)], 2.0, None, None, samples, 600_000, 131072)
    assert figures.metrics["j_per_token"] == pytest.approx(1240.0 / 31)
    assert figures.metrics["kv_usage_peak"] == 0.5
    assert figures.metrics["kv_pool_per_max_len"] == pytest.approx(600_000 / 131072)


def test_prompts_are_the_same_every_time_and_share_only_the_declared_prefix() -> None:
    plan = parse_plan(
        Path("/p/a.toml"),
        'control = "a"\ncandidate = "b"\n[workload]\nkind = "agent-long"\n'
        "prompt_tokens = 400\nshared_prefix_tokens = 300\nseed = 3\n[gate]\n"
        'metric = "ttft_p50_s"\nmin_change = 0.05\n',
    )
    prompts, again = Prompts(plan.workload), Prompts(plan.workload)
    first, second = prompts.measured(0), prompts.measured(1)
    assert first == again.measured(0) and first.text != second.text
    shared = len(prompts.prefix)
    assert first.text[:shared] == second.text[:shared] and first.text[shared] == second.text[shared] == "R"
    assert abs(len(first.text) / CHARS_PER_TOKEN - 400) < 20
    warm = prompts.warmup(0)
    assert warm.text.startswith("Warm-up") and not warm.text.startswith(first.text[:16])
    assert warm.max_tokens == 64 and first.max_tokens == plan.workload.max_tokens


def test_arrivals_burst_interval_and_poisson() -> None:
    def workload(extra: str):  # type: ignore[no-untyped-def]
        return parse_plan(
            Path("/p/a.toml"),
            f'control = "a"\ncandidate = "b"\n[workload]\nkind = "chat-short"\n'
            f'requests = 200\n{extra}\n[gate]\nmetric = "ttft_p50_s"\n'
            f"min_change = 0.05\n",
        ).workload

    assert set(arrivals(workload(""))) == {0.0}
    assert list(arrivals(workload('arrival = "interval"\ninterval_s = 2.5')))[:3] == [0.0, 2.5, 5.0]
    times = list(arrivals(workload('arrival = "poisson"\nrate_per_s = 4.0')))
    assert times == sorted(times) and len(times) == 200
    assert times[-1] / 199 == pytest.approx(0.25, rel=0.2)  # a mean gap of 1/rate
    assert times == list(arrivals(workload('arrival = "poisson"\nrate_per_s = 4.0')))
