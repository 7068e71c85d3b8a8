"""The simulator as a real process on 127.0.0.1: vLLM's flags, log, errors and HTTP API."""

from __future__ import annotations

import concurrent.futures
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rigctl.gpu.sampler import RigSampler
from rigctl.sim.claims import default_claims_dir
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig
from rigctl.vllm.bootlog import read_bootlog
from tests.support import present
from tests.support.serving import free_port
from tests.support.sim_server import AWQ_TP2, launch, serve_sim, wait_ready


@pytest.fixture
def server(sim_env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    yield from serve_sim(["--speculative-config", '{"method":"mtp","num_speculative_tokens":3}'], sim_env, tmp_path / "vllm.log")


@pytest.fixture
def small_pool(sim_env: dict[str, str], tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """256 MiB of KV at TP2 and fp8 KV: 10 blocks of 1,568 tokens (grown so a page holds a GDN
    state), 15,680 tokens of context; the state allows 10 sequences at most."""
    yield from serve_sim(
        ["--kv-cache-memory-bytes", str(256 * 2**20), "--max-model-len", "4096", "--max-num-seqs", "10"],
        sim_env,
        tmp_path / "small.log",
    )


def test_unknown_flag_exits_2_like_vllm(sim_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rigctl.sim.vllm_server", "serve", "m", "--swap-space", "4"],
        env=sim_env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "vllm: error: unrecognized arguments: --swap-space 4" in done.stderr  # as 0.32 says it


def test_port_in_use_fails_like_vllm(sim_env: dict[str, str], tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "rigctl.sim.vllm_server", *AWQ_TP2, "--port", str(port)],
            env=sim_env,
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert done.returncode == 1 and "OSError: [Errno 98] Address already in use" in done.stdout


def test_connection_refused_during_boot_then_ready(sim_env: dict[str, str], tmp_path: Path) -> None:
    port = free_port()
    proc = launch([*AWQ_TP2, "--port", str(port)], {**sim_env, "RIGCTL_SIM_TIME_SCALE": "0.05"}, tmp_path / "l")
    try:
        time.sleep(0.4)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
        wait_ready(f"http://127.0.0.1:{port}", proc)
    finally:
        proc.terminate()
        assert proc.wait(10) == 0  # SIGTERM: a clean exit


def test_boot_log_in_vllm_033_order(server: tuple[str, subprocess.Popen[bytes], Path]) -> None:
    _, _, log = server
    report = read_bootlog(log.read_text().splitlines())
    assert report.version == "0.33.0" and report.ready
    assert [p.name for p in report.phases] == [
        "start",
        "args",
        "engine",
        "weights",
        "model",
        "compile",
        "kv_memory",
        "kv_cache",
        "graphs",
        "init",
        "server",
        "ready",
    ]
    assert report.kv_tokens and report.max_concurrency and report.concurrency_len == 131072
    text = log.read_text()
    assert "non-default args: {" in text and "Starting vLLM server on http://127.0.0.1:" in text
    deadline = time.monotonic() + 5  # the access line is written after the answer: it may trail it a little
    while '"GET /health HTTP/1.1" 200 OK' not in text and time.monotonic() < deadline:
        time.sleep(0.02)
        text = log.read_text()
    assert '"GET /health HTTP/1.1" 200 OK' in text  # uvicorn's access lines, unless the profile silences them


def test_models_version_and_metrics(server: tuple[str, subprocess.Popen[bytes], Path]) -> None:
    url, _, _ = server
    models = httpx.get(f"{url}/v1/models").json()
    assert models["data"][0]["id"] == "qwen3.6-27b" and models["data"][0]["max_model_len"] == 131072
    assert httpx.get(f"{url}/version").json() == {"version": "0.33.0"}
    metrics = httpx.get(f"{url}/metrics")
    assert metrics.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    for name in (
        "vllm:num_requests_running{",
        "vllm:kv_cache_usage_perc{",
        "vllm:prefix_cache_queries_total{",
        "vllm:time_to_first_token_seconds_bucket{",
        "vllm:spec_decode_num_drafts_total{",
        'vllm:cache_config_info{block_size="1600"',
        "vllm:request_success_total{",
    ):
        assert name in metrics.text, name


def _complete(url: str, prompt: str, tokens: int) -> dict[str, Any]:
    answer: dict[str, Any] = httpx.post(
        f"{url}/v1/completions", timeout=60, json={"model": "qwen3.6-27b", "prompt": prompt, "max_tokens": tokens}
    ).json()
    return answer


def _counter(url: str, name: str) -> float:
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(name)


def test_streaming_chat_and_unknown_model(server: tuple[str, subprocess.Popen[bytes], Path]) -> None:
    url, _, _ = server
    with httpx.stream(
        "POST",
        f"{url}/v1/chat/completions",
        timeout=30,
        json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 12, "stream": True},
    ) as r:
        events = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(e[6:]) for e in events[:-1]]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert sum(c["choices"][0]["delta"]["content"].count("tok") for c in chunks) == 12
    missing = httpx.post(f"{url}/v1/completions", json={"model": "nope", "prompt": "x"})
    assert missing.status_code == 404 and "does not exist" in missing.json()["error"]["message"]


def test_prefix_cache_hits_on_a_repeated_prefix(server: tuple[str, subprocess.Popen[bytes], Path]) -> None:
    url, _, _ = server
    prefix = "system prompt " * 1200  # ~4,200 tokens: two 1,600-token hybrid blocks (MTP 3 at TP2: rigctl/vllm/kvpool.py)
    _complete(url, prefix + "first question", 4)
    hits_before = _counter(url, "vllm:prefix_cache_hits_total")
    _complete(url, prefix + "second question", 4)
    assert _counter(url, "vllm:prefix_cache_hits_total") - hits_before >= 3200
    short_before = _counter(url, "vllm:prefix_cache_hits_total")
    _complete(url, "tiny", 2)
    _complete(url, "tiny", 2)  # shorter than one block: a hybrid model never hits (the 528/784-token trap)
    assert _counter(url, "vllm:prefix_cache_hits_total") == short_before


def test_preemption_when_the_pool_runs_out(small_pool: tuple[str, subprocess.Popen[bytes], Path]) -> None:
    url, _, _ = small_pool
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(10) as pool:  # 10 x (1,500 + 800) tokens > 15,680
        results = list(pool.map(lambda i: _complete(url, f"request {i} " + "word " * 1200, 800), range(10)))
    assert all(r["usage"]["completion_tokens"] == 800 for r in results)  # preempted requests still finish
    assert _counter(url, "vllm:num_preemptions_total") > 0


def test_more_sequences_than_the_state_blocks_fails_as_vllm_does(sim_env: dict[str, str], tmp_path: Path) -> None:
    """vLLM refuses to start when max_num_seqs exceeds the blocks the GDN state may use: the same
    10 blocks as above, 16 sequences asked."""
    log = tmp_path / "seqs.log"
    proc = launch(
        [
            *AWQ_TP2,
            "--port",
            str(free_port()),
            "--kv-cache-memory-bytes",
            str(256 * 2**20),
            "--max-model-len",
            "4096",
            "--max-num-seqs",
            "16",
        ],
        sim_env,
        log,
    )
    assert proc.wait(30) == 1
    report = read_bootlog(log.read_text().splitlines())
    assert "ValueError: max_num_seqs (16) exceeds available Mamba cache blocks (10)" in log.read_text()
    assert report.failure is not None and report.failure.cause == "max_num_seqs"
    assert report.failure.suggestion == "set max_num_seqs to 10 or less, or give the pool more memory"


def test_spec_decode_counters(server: tuple[str, subprocess.Popen[bytes], Path]) -> None:
    url, _, _ = server
    _complete(url, "count to a thousand", 300)
    drafts = _counter(url, "vllm:spec_decode_num_drafts_total")
    accepted = _counter(url, "vllm:spec_decode_num_accepted_tokens_total")
    assert drafts > 0 and 0.3 < accepted / (3 * drafts) < 0.7  # acceptance near MTP's 0.51 at k=3


def test_sigterm_is_clean_and_the_rig_view_agrees(server: tuple[str, subprocess.Popen[bytes], Path]) -> None:
    _, proc, log = server
    snapshot = RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"), claims_dir=default_claims_dir()), with_host=False).snapshot()
    titles = {p.name for s in snapshot.samples for p in s.processes or () if p.pid == proc.pid}
    assert titles == {"VLLM::Worker_TP0", "VLLM::Worker_TP1"}
    assert all(present(s.memory_used) > 18 * 2**30 for s in snapshot.samples)
    assert not [w for w in snapshot.warnings if w.code == "foreign-vram"]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0
    assert "Application shutdown complete." in log.read_text()
    assert not (default_claims_dir() / f"{proc.pid}.json").exists()


def test_a_refused_body_is_read_and_the_kept_alive_connection_serves_on(sim_env: dict[str, str], tmp_path: Path) -> None:
    """A 401 answered before the body is looked at (the key is wrong): the body is read all the
    same, so the next request on the same connection is read as itself, as uvicorn does."""
    for url, _, _ in serve_sim(["--api-key", "right"], sim_env, tmp_path / "keyed.log"):
        body = json.dumps({"model": "qwen3.6-27b", "prompt": "x" * 5000, "max_tokens": 2})
        with httpx.Client(base_url=url, timeout=30) as client:  # one kept-alive connection
            wrong = client.post("/v1/completions", content=body, headers={"Authorization": "Bearer wrong"})
            right = client.post("/v1/completions", content=body, headers={"Authorization": "Bearer right"})
        assert wrong.status_code == 401 and right.status_code == 200, (wrong.text, right.text[:300])
        assert right.json()["usage"]["completion_tokens"] == 2


def test_a_request_past_the_context_is_refused_as_vllm_refuses_it(server: tuple[str, subprocess.Popen[bytes], Path]) -> None:
    url = server[0]
    long = httpx.post(f"{url}/v1/completions", json={"model": "qwen3.6-27b", "prompt": "w" * 600_000, "max_tokens": 16}, timeout=30)
    assert long.status_code == 400, long.text
    assert long.json()["error"]["message"].startswith(
        "This model's maximum context length is 131072 tokens. However, you requested"
    )
    many = httpx.post(f"{url}/v1/completions", json={"model": "qwen3.6-27b", "prompt": "w", "max_tokens": 200_000}, timeout=30)
    assert many.status_code == 400 and "max_tokens=200000 cannot be greater than max_model_len=131072" in many.text, many.text


def test_a_burst_of_streams_is_queued_as_uvicorn_queues_it(server: tuple[str, subprocess.Popen[bytes], Path]) -> None:
    """uvicorn listens with a backlog of 2,048 (capped by the kernel's somaxconn); socketserver's
    5 reset a burst of 32 to 64 streams (seed 000's 32-concurrent row). The kernel says the
    backlog of a listening socket as its Send-Q; then 96 streams opened at once are all answered."""
    url, _, _ = server
    port = int(url.rsplit(":", 1)[1])
    if shutil.which("ss"):  # iproute2: where it is missing, the burst below still holds
        listening = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout.split()
        somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
        assert int(listening[2]) == min(2048, somaxconn), listening

    def stream(_: int) -> int:
        body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": True}
        with httpx.stream("POST", f"{url}/v1/chat/completions", timeout=60, json=body) as r:
            return sum(1 for line in r.iter_lines() if line == "data: [DONE]")

    with concurrent.futures.ThreadPoolExecutor(max_workers=96) as pool:
        assert list(pool.map(stream, range(96))) == [1] * 96
