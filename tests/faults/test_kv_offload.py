"""vLLM 0.33's KV offload to host RAM (--kv-offloading-size, GiB summed over the TP ranks): a
profile asking more than the host has available is refused before anything stops; one that fits
boots, and `fit` shows the offloaded pool beside the GPU's."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.faults.rig import Rig


def recorded_loads(db: Path) -> float:
    """The offload's bytes loaded back, as the record holds them so far."""
    if not db.is_file():
        return 0.0
    with sqlite3.connect(db) as connection:
        (loaded,) = connection.execute("SELECT COALESCE(SUM(offload_load_bytes), 0) FROM samples").fetchone()
    return float(loaded)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    harness = Rig(tmp_path / "home")
    yield harness
    harness.cleanup()


def test_an_offload_larger_than_the_hosts_memory_is_refused_before_the_stop(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    pid = rig.record()["pid"]
    too_much = int(psutil.virtual_memory().total / 2**30) * 4 + 64
    rig.add_profile("offload-big", f"kv_offloading_size = {too_much}\n")
    refused = rig.rigctl("switch", "offload-big")
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert f"--kv-offloading-size {too_much} GiB pins that much host RAM, and the host has " in refused.stderr, refused.stderr
    assert rig.record()["pid"] == pid and rig.status()["active_profile"] == "good"  # nothing stopped
    rig.add_profile("offload", "kv_offloading_size = 1\n")
    switched = rig.rigctl("switch", "offload")
    assert switched.returncode == 0, switched.stdout + switched.stderr
    fitted = json.loads(rig.rigctl("fit", "offload", "--json").stdout)
    offload = fitted["offload"]
    assert offload["gib"] == 1 and offload["host_ram_gib"] == 1 and offload["backend"] == "native", offload
    # 16 full-attention layers x 4 KV heads x 256 x K and V x 1 byte (fp8 KV) = 32 KiB a token, as
    # the 3090 owner measured: 32,768 in 1 GiB
    assert offload["tokens"] == 32_768, offload
    text = rig.rigctl("fit", "offload").stdout
    assert "KV offload: 1 GiB of host RAM pinned (native; summed over the TP ranks): ~32,768 tokens" in text, text


def test_blocks_the_gpu_pool_evicts_come_back_from_the_offload(rig: Rig) -> None:
    """A GPU pool of 15 blocks and a 1 GiB offload: six distinct 7k-token prompts evict
    the first from the GPU; sent again it is found in host RAM. The engine's counters say so, and
    rigctl metrics reads them (stored and loaded bytes, the external hit rate), and so does the
    record `rigctl report` reads."""
    import httpx

    rig.add_profile("offload-small", "kv_offloading_size = 1\nkv_cache_memory_bytes = 400000000\nmax_model_len = 14000\n")
    assert rig.rigctl("switch", "offload-small").returncode == 0
    recorder = rig.popen("record", "--interval", "1")
    try:
        rig.wait_for(recorder, "recording to")
        url = f"http://127.0.0.1:{rig.port}/v1/completions"
        prompts = [f"document {i}: " + f"word{i} " * 4500 for i in range(6)]  # ~7,000 tokens: 4 blocks of 1,600 each
        for prompt in [*prompts, prompts[0]]:
            answer = httpx.post(url, json={"model": "qwen3.6-27b", "prompt": prompt, "max_tokens": 2}, timeout=120)
            assert answer.status_code == 200, answer.text
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not recorded_loads(rig.state_dir / "record.sqlite"):
            time.sleep(0.5)
    finally:
        recorder.send_signal(signal.SIGTERM)
        code, out = rig.finish(recorder)
    assert code == 0, out
    # the record keeps what the offload did: `rigctl report` shows it beside the hit rate
    reported = json.loads(rig.rigctl("report", "offload-small", "--json").stdout)["profiles"][0]
    assert reported["offload_store_bytes"] > 0 and reported["offload_load_bytes"] > 0, reported
    assert reported["external_prefix_hits"] > 0 and 0 < reported["external_hit_rate"] <= 1, reported
    table = rig.rigctl("report", "offload-small").stdout
    assert "KV offload: ext. hit rate" in table and "stored / loaded" in table, table
    scrape = httpx.get(f"http://127.0.0.1:{rig.port}/metrics", timeout=30).text

    def total(name: str) -> float:
        return sum(float(line.rsplit(" ", 1)[1]) for line in scrape.splitlines() if line.startswith(f"vllm:{name}_total"))

    assert total("kv_offload_store_bytes") > 0 and total("kv_offload_load_bytes") > 0, scrape[-2000:]
    assert total("external_prefix_cache_hits") > 0
    figures = json.loads(rig.rigctl("metrics", "--json", "--watch", "--count", "1", "--interval", "1").stdout.splitlines()[-1])
    assert "offload_store_bps" in json.dumps(figures), figures
