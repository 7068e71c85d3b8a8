"""The boot-log reader on every shared vLLM sample, across the formats of 0.6 to 0.33."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigctl.cli import main
from rigctl.vllm.bootlog import BootLogReader, BootReport, classify_line, read_bootlog
from tests.support import present

SAMPLES = Path(__file__).parent.parent / "fixtures" / "vllm"


def sample(name: str) -> BootReport:
    return read_bootlog((SAMPLES / name).read_text().splitlines())


def test_0_6_v0_blocks_times_block_size() -> None:
    r = sample("bootlog_0.6.x_1.log")
    assert (r.gpu_blocks, r.cpu_blocks, r.pool_tokens) == (5691, 2048, 91_056)
    assert (r.max_concurrency, r.concurrency_len) == (11.12, 8192)
    assert r.available_kv_gib == 11.12 and r.model_load_gib == 14.9595


def test_0_7_3_two_lines_with_separators() -> None:
    r = sample("bootlog_0.7.3_1.log")
    assert (r.kv_tokens, r.concurrency_len, r.max_concurrency) == (2_042_016, 2048, 997.08)


def test_0_11_engine_prefix_and_graphs() -> None:
    r = sample("bootlog_0.11.0_1.log")
    assert (r.kv_tokens, r.max_concurrency, r.concurrency_len) == (425_424, 6.49, 65_536)
    assert r.gpu_blocks == 26589 and r.available_kv_gib == 16.23
    assert (r.graph_capture_seconds, r.graph_memory_gib, r.init_engine_seconds) == (7.0, 0.95, 25.99)
    assert [p.name for p in r.phases] == ["compile", "kv_memory", "kv_cache", "graphs", "init"]
    assert present(r.phase("graphs")).seconds == 9.0  # 09:11:55 -> 09:12:04


def test_0_24_without_engine_suffix() -> None:
    r = sample("bootlog_0.24.0_1.log")
    assert (r.kv_tokens, r.max_concurrency, r.concurrency_len, r.available_kv_gib) == (567_978, 4.33, 131_072, 5.98)
    assert r.phase("args") is not None and r.failure is None


def test_max_model_len_error_with_the_models_typo() -> None:
    f = present(sample("bootlog_0.1x_maxlen_error.log").failure)
    assert f.cause == "max_model_len" and (f.max_model_len, f.estimated_max_len) == (262_144, 50_512)
    assert present(f.suggestion).startswith("set max_model_len to 50,512 or less")
    assert f.line.startswith("(EngineCore_DP0 pid=494) ValueError: To serve")


def test_torch_oom_from_a_tp_worker() -> None:
    f = present(sample("bootlog_0.8.x_oom.log").failure)
    assert f.cause == "oom" and "expandable_segments" in present(f.suggestion)


def test_stats_log_is_not_a_boot() -> None:
    r = sample("statslog_0.20.1_1.log")
    assert r.failure is None and r.phases == [] and r.pool_tokens is None


@pytest.mark.parametrize(
    "line,cause",
    [
        (
            (
                "INFO 01-01 00:00:00 [kv_cache_utils.py:1148] GPU + host KV cache size: 1,000 tokens, Maximum concurrency "
                "for 500 tokens per request: 2.00x"
            ),
            None,
        ),
        (
            (
                "(EngineCore pid=7) ERROR 05-01 10:00:00 [core.py:1] ValueError: Free memory on device cuda:0 (20.1/23.6 GiB) on "
                "startup is less than desired GPU memory utilization (0.92, 21.7 GiB). Decrease GPU memory utilization."
            ),
            "foreign_vram",
        ),
        ("vllm serve: error: unrecognized arguments: --swap-space 4", "unknown_flag"),
        ("OSError: [Errno 98] Address already in use", "port_in_use"),
        ("RuntimeError: CUDA out of memory occurred when warming up sampler with 256 dummy requests.", "oom_sampler"),
        ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`", "no_kv_memory"),
        (
            (
                "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in "
                "KV cache (20000). Try increasing `gpu_memory_utilization`"
            ),
            "max_model_len",
        ),
    ],
)
def test_classified_lines(line: str, cause: str | None) -> None:
    found = classify_line(BootLogReader.split(line)[2])
    assert (found.cause if found else None) == cause


def test_device_prefixed_capacity_line() -> None:
    r = read_bootlog(
        [
            (
                "(EngineCore pid=3) INFO 07-01 10:00:00 [kv_cache_utils.py:1148] GPU + host KV cache size: "
                "1,234,567 tokens, Maximum concurrency for 131,072 tokens per request: 9.42x"
            )
        ]
    )
    assert (r.kv_tokens, r.kv_device, r.max_concurrency) == (1_234_567, "GPU + host", 9.42)


def test_cli_bootlog_reads_a_file_and_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["bootlog", str(SAMPLES / "bootlog_0.11.0_1.log")]) == 0
    out = capsys.readouterr().out
    assert "KV capacity at 65,536 tokens: 425,424 tokens, max concurrency 6.49x" in out
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO((SAMPLES / "bootlog_0.1x_maxlen_error.log").read_text()))
    assert main(["bootlog", "-", "--json"]) == 0
    assert '"estimated_max_len": 50512' in capsys.readouterr().out
    assert main(["bootlog", str(SAMPLES / "bootlog_0.8.x_oom.log")]) == 1
