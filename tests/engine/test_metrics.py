"""Parsing and deriving engine figures; expected values are computed by hand in each test.

Expositions are written by prometheus_client, the library vLLM itself writes /metrics
with, using vLLM 0.33's metric names, labels (model_name, engine) and buckets.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tracemalloc
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from rigctl.cli import main
from rigctl.engine.derive import Estimate, histogram_quantile, interval, quantile_estimate
from rigctl.engine.metrics import snapshot
from rigctl.engine.prom import ExpositionError, parse
from rigctl.vllm.metric_names import TOKEN_LATENCY_BUCKETS, TTFT_BUCKETS
from tests.support import present

SAMPLES = Path(__file__).parent.parent / "fixtures" / "vllm"
TTFT, TPOT = TTFT_BUCKETS, TOKEN_LATENCY_BUCKETS  # vLLM 0.33's own edges (rigctl/vllm/metric_names.py)
LABELS = ["model_name", "engine"]


class FakeVllm:
    """vLLM 0.33's PrometheusStatLogger families, written through prometheus_client."""

    def __init__(self, engines: int = 1) -> None:
        r = self.registry = CollectorRegistry()
        self.engines = [str(e) for e in range(engines)]
        self.running = Gauge("vllm:num_requests_running", "running", LABELS, registry=r)
        self.waiting = Gauge("vllm:num_requests_waiting", "waiting", LABELS, registry=r)
        self.kv = Gauge("vllm:kv_cache_usage_perc", "kv", LABELS, registry=r)
        self.queries = Counter("vllm:prefix_cache_queries", "q", LABELS, registry=r)
        self.hits = Counter("vllm:prefix_cache_hits", "h", LABELS, registry=r)
        self.prompt = Counter("vllm:prompt_tokens", "p", LABELS, registry=r)
        self.by_source = Counter("vllm:prompt_tokens_by_source", "s", [*LABELS, "source"], registry=r)
        self.gen = Counter("vllm:generation_tokens", "g", LABELS, registry=r)
        self.preempt = Counter("vllm:num_preemptions", "pre", LABELS, registry=r)
        self.success = Counter("vllm:request_success", "ok", [*LABELS, "finished_reason"], registry=r)
        self.drafts = Counter("vllm:spec_decode_num_drafts", "d", LABELS, registry=r)
        self.draft_tokens = Counter("vllm:spec_decode_num_draft_tokens", "dt", LABELS, registry=r)
        self.accepted = Counter("vllm:spec_decode_num_accepted_tokens", "a", LABELS, registry=r)
        self.ttft = Histogram("vllm:time_to_first_token_seconds", "ttft", LABELS, buckets=TTFT, registry=r)
        self.tpot = Histogram("vllm:request_time_per_output_token_seconds", "tpot", LABELS, buckets=TPOT, registry=r)
        self.info = Gauge(
            "vllm:cache_config_info",
            "cache",
            ["block_size", "kv_cache_size_tokens", "kv_cache_max_concurrency", "num_gpu_blocks", "engine"],
            registry=r,
        )
        for e in self.engines:
            self.info.labels("800", "646391", "4.93", "808", e).set(1)

    def l(self, engine: str = "0") -> dict[str, str]:  # noqa: E743
        return {"model_name": "qwen3.6-27b", "engine": engine}

    def text(self) -> str:
        return generate_latest(self.registry).decode()


def two_scrapes() -> tuple[str, str]:
    vllm = FakeVllm()
    l = vllm.l()
    vllm.queries.labels(**l).inc(10_000)
    vllm.hits.labels(**l).inc(2_000)
    vllm.prompt.labels(**l).inc(10_000)
    vllm.gen.labels(**l).inc(1_000)
    vllm.drafts.labels(**l).inc(100)
    vllm.draft_tokens.labels(**l).inc(300)
    vllm.accepted.labels(**l).inc(150)
    for value in (0.03, 0.05, 0.07):
        vllm.ttft.labels(**l).observe(value)
    before = vllm.text()
    vllm.running.labels(**l).set(3)
    vllm.kv.labels(**l).set(0.25)
    vllm.queries.labels(**l).inc(4_000)  # interval: 4,000 queried, 3,000 hit
    vllm.hits.labels(**l).inc(3_000)
    vllm.prompt.labels(**l).inc(4_000)
    vllm.by_source.labels(**l, source="local_compute").inc(1_000)
    vllm.by_source.labels(**l, source="local_cache_hit").inc(3_000)
    vllm.gen.labels(**l).inc(850)  # 85 tok/s over 10 s
    vllm.preempt.labels(**l).inc(2)
    vllm.drafts.labels(**l).inc(200)  # interval: 200 drafts, 600 draft tokens, 330 accepted
    vllm.draft_tokens.labels(**l).inc(600)
    vllm.accepted.labels(**l).inc(330)
    vllm.success.labels(**l, finished_reason="stop").inc(7)
    vllm.success.labels(**l, finished_reason="length").inc(1)
    # interval TTFT: 10 observations: 4 in (0.08, 0.1], 4 in (0.1, 0.25], 2 in (0.5, 0.75]
    for value in (0.09, 0.09, 0.095, 0.1, 0.2, 0.2, 0.2, 0.25, 0.6, 0.7):
        vllm.ttft.labels(**l).observe(value)
    for value in (0.02, 0.02, 0.03, 0.04):  # TPOT: 2 in (0.01, 0.025], 2 in (0.025, 0.05]
        vllm.tpot.labels(**l).observe(value)
    return before, vllm.text()


def test_interval_figures_equal_hand_computed_values() -> None:
    before, after = (snapshot(parse(t), 0.0) for t in two_scrapes())
    f = interval(before, after, 10.0)
    assert not f.restarted
    assert f.hit_rate == pytest.approx(3_000 / 4_000)
    assert f.hit_rate_lifetime == pytest.approx(5_000 / 14_000)
    assert f.prompt_tps == pytest.approx(400.0) and f.generation_tps == pytest.approx(85.0)
    assert f.prefill_compute_tps == pytest.approx(100.0)
    assert f.preemptions == 2 and f.finished == {"stop": 7, "length": 1}
    assert f.acceptance_rate == pytest.approx(330 / 600) and f.mean_acceptance_length == pytest.approx(1 + 330 / 200)
    # TTFT p50: rank 5 of 10 falls in (0.1, 0.25] holding ranks 5..8: 0.1 + 0.15 * (5 - 4) / 4
    ttft = f.latency["ttft"]
    assert present(ttft.p50).value == pytest.approx(0.1375) and present(ttft.p50).relation == "~"
    # p95: rank 9.5 falls in (0.5, 0.75] holding ranks 9..10: 0.5 + 0.25 * (9.5 - 8) / 2
    assert present(ttft.p95).value == pytest.approx(0.6875) and present(ttft.p95).relation == "~"
    # TPOT p50: rank 2 of 4 is the top of (0.01, 0.025]; p95: rank 3.8 in (0.025, 0.05]: 0.025 + 0.025 * 1.8 / 2
    assert present(f.latency["tpot"].p50).value == pytest.approx(0.025)
    assert present(f.latency["tpot"].p95).value == pytest.approx(0.0475)
    assert after.kv_usage == 0.25 and after.kv_pool_tokens == 646_391 and after.kv_max_concurrency == 4.93


def test_cli_offline_interval_matches_hand_computed_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before, after = two_scrapes()
    (tmp_path / "a.prom").write_text(before)
    (tmp_path / "b.prom").write_text(after)
    assert (
        main(["metrics", "--file", str(tmp_path / "a.prom"), "--file", str(tmp_path / "b.prom"), "--seconds", "10", "--json"]) == 0
    )
    data = json.loads(capsys.readouterr().out)["interval"]
    assert data["hit_rate"] == pytest.approx(0.75) and data["generation_tps"] == pytest.approx(85.0)
    assert data["latency"]["ttft"]["p50"] == {"value": pytest.approx(0.1375), "relation": "~"}
    assert data["latency"]["ttft"]["p95"] == {"value": pytest.approx(0.6875), "relation": "~"}
    assert data["acceptance_rate"] == pytest.approx(0.55)
    assert main(["metrics", "--file", str(tmp_path / "b.prom")]) == 0
    assert "KV cache 25.0% of 646,391 tokens (4.93x at max_model_len)" in capsys.readouterr().out


def test_counter_reset_is_reported_and_never_negative() -> None:
    after, before = (snapshot(parse(t), 0.0) for t in two_scrapes())  # swapped: every counter goes down
    f = interval(before, after, 10.0)
    assert f.restarted
    assert f.generation_tps == pytest.approx(1_000 / 10) and f.prompt_tps == pytest.approx(1_000)
    assert f.preemptions is None  # the series is absent after the restart: n/a, not 0
    assert all(q.count >= 0 for q in f.latency.values())


def test_energy_counter_reset_gives_a_positive_power_from_the_gauges() -> None:
    from rigctl.gpu.model import GpuSample

    before, after = (snapshot(parse(t), 0.0) for t in two_scrapes())
    earlier = (GpuSample(0, 100.0, power_w=300.0, energy_j=5_000_000.0),)
    later = (GpuSample(0, 110.0, power_w=340.0, energy_j=1_200.0),)  # the driver reloaded: the counter restarted
    f = interval(before, after, 10.0, earlier, later)
    assert f.power_w == pytest.approx(320.0)  # the mean of the two readings, not (1,200 - 5e6) / 10
    assert f.joules_per_token == pytest.approx(320.0 / 85.0)
    counted = interval(before, after, 10.0, earlier, (GpuSample(0, 110.0, power_w=340.0, energy_j=5_003_300.0),))
    assert counted.power_w == pytest.approx(330.0)  # from the counter when it only went up


def test_two_dp_engines_sum_average_and_keep_per_engine() -> None:
    vllm = FakeVllm(engines=2)
    for engine, running, waiting, kv in (("0", 3, 1, 0.2), ("1", 5, 0, 0.6)):
        vllm.running.labels(**vllm.l(engine)).set(running)
        vllm.waiting.labels(**vllm.l(engine)).set(waiting)
        vllm.kv.labels(**vllm.l(engine)).set(kv)
        vllm.gen.labels(**vllm.l(engine)).inc(100)
    snap = snapshot(parse(vllm.text()), 0.0)
    assert (snap.running, snap.waiting) == (8, 1) and snap.kv_usage == pytest.approx(0.4)
    assert [(e.engine, e.running, e.kv_usage, e.kv_pool_tokens) for e in snap.engines] == [
        ("0", 3, 0.2, 646_391),
        ("1", 5, 0.6, 646_391),
    ]
    assert snap.counter("generation_tokens") == 200


def test_shared_samples_old_names_included() -> None:
    s08 = snapshot(parse((SAMPLES / "metrics_0.8.x_1.prom").read_text()), 0.0)
    assert (s08.running, s08.waiting, s08.kv_usage) == (0, 0, 0.0)  # via gpu_cache_usage_perc
    assert s08.engines[0].engine == "0" and s08.model_names == ("Qwen/Qwen2.5-Coder-32B-Instruct",)
    assert s08.process_start == pytest.approx(1.74262400557e9)
    s10 = snapshot(parse((SAMPLES / "metrics_0.10.0_1.prom").read_text()), 0.0)
    assert s10.kv_usage == pytest.approx(9.75010481363281e-06)
    assert s10.counter("prefix_queries") == 32 and s10.counter("prefix_hits") == 0  # old name as the fallback
    assert s10.model_names == ("zai-org/GLM-4.5",) and s10.running is None  # absent: None, not 0
    s06 = snapshot(parse((SAMPLES / "metrics_0.6.x_1.prom").read_text()), 0.0)
    assert s06.running is None and s06.kv_usage is None and s06.histograms == {}


def test_v0_gauges_and_old_itl_name() -> None:
    text = (
        'vllm:gpu_prefix_cache_hit_rate{model_name="m"} 0.42\n'
        'vllm:avg_generation_throughput_toks_per_s{model_name="m"} 55.5\n'
        'vllm:time_per_output_token_seconds_bucket{le="0.05",model_name="m"} 3.0\n'
        'vllm:time_per_output_token_seconds_bucket{le="+Inf",model_name="m"} 4.0\n'
        'vllm:time_per_output_token_seconds_count{model_name="m"} 4.0\n'
        'vllm:time_per_output_token_seconds_sum{model_name="m"} 0.2\n'
    )
    empty, snap = snapshot(parse(""), 0.0), snapshot(parse(text), 1.0)
    f = interval(empty, snap, 1.0)
    assert f.hit_rate == 0.42 and f.generation_tps == 55.5
    # rank 2 of 4 falls in the first bucket: only "below 0.05 s" is known (Prometheus would say 0.033)
    assert f.latency["itl"].p50 == Estimate(0.05, "<") and histogram_quantile(0.5, ((0.05, 3.0), (math.inf, 4.0))) == pytest.approx(
        0.05 * 2 / 3
    )


def test_a_quantile_beyond_the_buckets_is_a_bound_not_a_number() -> None:
    buckets = ((0.3, 90.0), (0.5, 95.0), (1.0, 99.0), (math.inf, 100.0))  # vLLM's coarse queue-time edges
    assert quantile_estimate(0.5, buckets) == Estimate(0.3, "<")  # the real mean was 11 us; never "0.15 s"
    assert quantile_estimate(0.95, buckets) == Estimate(0.5, "~")
    assert quantile_estimate(0.995, buckets) == Estimate(1.0, ">")
    assert quantile_estimate(0.5, ((0.3, 0.0), (math.inf, 0.0))) is None


def test_histogram_quantile_edges() -> None:
    assert histogram_quantile(0.5, ()) is None
    assert histogram_quantile(0.5, ((1.0, 0.0), (math.inf, 0.0))) is None
    assert histogram_quantile(0.99, ((1.0, 1.0), (math.inf, 10.0))) == 1.0  # in +Inf: the last finite bound


def test_escapes_nan_inf_timestamps_and_created() -> None:
    e = parse('x{a="q\\"u}o\\\\te\\n"} NaN 1700000000000\ny +Inf\nz -Inf\nw_created 17e8\n# TYPE w counter\n')
    assert e.get("x") == [((("a", 'q"u}o\\te\n'),), e.get("x")[0][1])] and math.isnan(e.get("x")[0][1])
    assert e.get("y")[0][1] == math.inf and e.get("z")[0][1] == -math.inf and "w_created" not in e.samples
    assert e.types == {"w": "counter"} and not e.truncated


def test_garbage_and_truncated_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ExpositionError, match="line 1"):
        parse("<html><body>502 Bad Gateway</body></html>\n")
    cut = parse('vllm:num_requests_running{engine="0"} 3\nvllm:num_requests_waiting{engine="0"} 1')
    assert cut.truncated and snapshot(cut, 0.0).waiting == 1
    broken = parse('vllm:num_requests_running{engine="0"} 3\nvllm:kv_cache_usage_perc{engine="0"')
    assert broken.truncated and broken.errors and snapshot(broken, 0.0).running == 3
    (tmp_path / "bad.prom").write_text("this is not prometheus\n")
    assert main(["metrics", "--file", str(tmp_path / "bad.prom")]) == 2
    assert "not a Prometheus text exposition" in capsys.readouterr().err
    # vLLM's, but only families rigctl reads no figure from: named, never "none of vLLM's"
    (tmp_path / "other.prom").write_text('vllm:lora_requests_info{max_lora="1"} 1\nvllm:iteration_tokens_total_count 3\n')
    assert main(["metrics", "--file", str(tmp_path / "other.prom")]) == 2
    said = capsys.readouterr().err
    assert "it holds 2 of vLLM's families (vllm:iteration_tokens_total_count, vllm:lora_requests_info)" in said
    assert "but none rigctl reads a figure from" in said and "none of vLLM's metrics" not in said


@pytest.mark.timeout(60)
def test_five_megabytes_parse_in_bounded_memory() -> None:
    vllm = FakeVllm(engines=1)
    for model in range(60):  # many label sets: ~5 MB of histogram lines
        labels = {"model_name": f"model-{model:03d}-" + "x" * 40, "engine": "0"}
        for value in (0.01, 0.2, 3.0):
            vllm.ttft.labels(**labels).observe(value)
            vllm.tpot.labels(**labels).observe(value)
        vllm.gen.labels(**labels).inc(model)
    text = vllm.text()
    while len(text) < 5_000_000:
        text += text
    tracemalloc.start()
    exposition = parse(text)
    snap = snapshot(exposition, 0.0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(text) >= 5_000_000 and exposition.count() > 40_000
    assert snap.histograms["ttft"].count > 0
    assert peak < 12 * len(text)  # bounded: a small multiple of the text, however large


def test_the_dashboard_scrape_reads_only_what_snapshot_needs_and_misses_nothing() -> None:
    from rigctl.sim.exposition import render
    from rigctl.sim.stats import Stats
    from rigctl.vllm.metric_names import SNAPSHOT_NAMES

    stats = Stats(engines=2, max_model_len=131072, spec=True)
    for i in range(50):
        stats.observe("time_to_first_token_seconds", i / 40, i % 2)
        stats.count("generation_tokens", 7, i % 2)
        stats.count_by("spec_decode_num_accepted_tokens_per_pos", "position", str(i % 3), 1, 0)
    texts = [render(stats, "qwen3.6-27b", {"block_size": "16", "kv_cache_size_tokens": "646391"}, 1.0e9)]
    texts += [path.read_text() for path in sorted(SAMPLES.glob("*.prom"))]
    assert len(texts) > 3
    assert parse(texts[0], names=SNAPSHOT_NAMES).count() < parse(texts[0]).count() * 0.7  # 0.33: 281 of 502
    for text in texts:
        full, lean = parse(text), parse(text, names=SNAPSHOT_NAMES)
        assert lean.count() <= full.count()
        expected = snapshot(full, 0.0)
        if not lean.count():  # a fragment of families the dashboard never shows (0.6's request_params)
            expected = dataclasses.replace(expected, model_names=())
        assert repr(snapshot(lean, 0.0)) == repr(expected)
