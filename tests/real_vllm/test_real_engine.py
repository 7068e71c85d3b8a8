"""rigctl against a real vLLM (the CPU build, the tiny model), through the real CLI, with the
process launcher and no --sim. The cases run in order on one rig: a boot costs half a minute."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import time

import httpx
import pytest

from rigctl.engine.metrics import snapshot
from rigctl.engine.prom import parse
from tests.real_vllm.conftest import ENV, KV_BYTES_PER_TOKEN, VLLM, RealRig

POOL = 1024**3 // KV_BYTES_PER_TOKEN  # VLLM_CPU_KVCACHE_SPACE=1: 1 GiB of KV


def scrape(rig: RealRig) -> dict[str, str]:
    text = httpx.get(f"http://127.0.0.1:{rig.port}/metrics", timeout=10).text
    ((labels, _),) = parse(text).get("vllm:cache_config_info")
    return dict(labels)


def test_a_switch_to_a_good_profile_reads_the_pool_the_engine_reports(real: RealRig) -> None:
    done = real.rigctl("switch", "tiny", timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"KV capacity at 2,048: {POOL:,} tokens (512.00x)" in done.stdout
    assert "tiny: vLLM started" in done.stdout  # the logo ticks the first phase
    info = scrape(real)
    assert int(info["kv_cache_size_tokens"]) == POOL  # what the engine itself says
    (record,) = json.loads(real.rigctl("history", "--json").stdout)
    assert record["kv_tokens"] == POOL and record["available_kv_gib"] == 1.0
    assert record["vllm_version"] == "0.32.0" and record["max_model_len"] == 2048
    assert record["boot_seconds"] > 10  # the imports before vLLM's first line are in it
    # the advisor, with the KV size set (VLLM_CPU_KVCACHE_SPACE), predicts that pool exactly
    fit = real.rigctl("fit", "tiny", "--json")
    assert fit.returncode == 0, fit.stdout + fit.stderr
    (layout,) = json.loads(fit.stdout)["layouts"]
    assert layout["pool_tokens"] == record["kv_tokens"] and layout["fits"] is True and layout["predicted"] is True
    real.check_invariants()


def test_status_and_metrics_say_what_a_direct_scrape_says(real: RealRig) -> None:
    status = real.status()
    assert status["active_profile"] == "tiny" and status["server"]["max_model_len"] == 2048
    httpx.post(
        f"http://127.0.0.1:{real.port}/v1/completions", timeout=60, json={"model": "tiny", "prompt": "def f(x):", "max_tokens": 8}
    )
    done = real.rigctl("metrics", "--json", "--interval", "1")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)["snapshot"]
    direct = snapshot(parse(httpx.get(f"http://127.0.0.1:{real.port}/metrics", timeout=10).text), 0.0)
    assert shown["kv_pool_tokens"] == direct.kv_pool_tokens == POOL
    assert shown["block_size"] == direct.block_size
    assert shown["counters"]["generation_tokens"] == direct.counters["generation_tokens"] >= 8
    text = real.rigctl("metrics")
    assert f"KV cache 0.0% of {POOL:,} tokens (512.00x at max_model_len)" in text.stdout


def test_the_running_engine_imports_as_the_profile_that_started_it(real: RealRig) -> None:
    """`rigctl profile import --pid` on the real vLLM process: its argv read from /proc as vLLM's
    own parser reads it, and the environment vLLM reads; the imported profile launches the same
    command line as the profile that started it (the environment may hold more: the process
    inherited rigctl's own, and only what vLLM's stack reads is kept)."""
    record = json.loads((real.state_dir / "server.json").read_text())
    done = real.rigctl("profile", "import", "mirror", "--pid", str(record["pid"]))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"imported process {record['pid']} as mirror" in done.stdout
    diff = real.rigctl("profile", "diff", "tiny", "mirror", "--json")
    assert diff.returncode == 0, diff.stderr
    changes = json.loads(diff.stdout)
    assert [c for c in changes if not c["what"].startswith("env ")] == [], changes
    assert not [c for c in changes if c["after"] is None], changes  # nothing of tiny's own is lost
    text = (real.profiles / "mirror.toml").read_text()
    assert f'vllm_command = ["{VLLM}"]' in text and 'VLLM_CPU_KVCACHE_SPACE = "1"' in text


def test_the_exporter_joins_the_rig_and_the_engines_own_families(real: RealRig) -> None:
    """`rigctl exporter --once --engine` on the real engine: rigctl's pool equals the engine's
    own cache_config_info, and every family of the real /metrics comes along with the rig label."""
    from prometheus_client.parser import text_string_to_metric_families

    done = real.rigctl("exporter", "--once", "--rig", "cpu-box", "--engine")
    assert done.returncode == 0, done.stderr
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(done.stdout):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    assert all(labels["rig"] == "cpu-box" for series in samples.values() for labels, _ in series)
    ((_, pool),) = samples["rigctl_kv_pool_tokens"]
    ((info, _),) = samples["vllm:cache_config_info"]
    assert pool == int(info["kv_cache_size_tokens"]) == POOL
    assert samples["rigctl_engine_metrics_up"] == [({"rig": "cpu-box"}, 1.0)]
    direct = {f.name for f in text_string_to_metric_families(httpx.get(f"http://127.0.0.1:{real.port}/metrics", timeout=10).text)}
    exported = {f.name for f in text_string_to_metric_families(done.stdout)}
    assert {n for n in direct if n.startswith("vllm:")} <= exported


def test_the_dashboard_shows_the_real_pool_and_max_model_len(real: RealRig, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in real.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("RIGCTL_SIM", raising=False)
    asyncio.run(_dashboard(real))


async def _dashboard(real: RealRig) -> None:
    import argparse

    from rigctl.cli.context import make_context
    from rigctl.gpu.sampler import RigSampler
    from rigctl.sim.rig import SimulatedBackend
    from rigctl.sim.rigspec import load_rig
    from rigctl.tui.app import make_app
    from tests.tui.helpers import poll, screen_text

    ctx = make_context(argparse.Namespace(sim=None))
    sampler = RigSampler(SimulatedBackend(load_rig("1x3090"), claims_dir=real.home / "claims"))  # no GPU here
    app = make_app(sampler, ctx, poll_interval=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await poll(app, pilot)
        await pilot.pause(1.2)
        await poll(app, pilot)
        shown = screen_text(app)
    assert f"of {POOL:,} tok (512.00x)" in shown and "max_model_len 2,048" in shown, shown


def test_a_kv_cache_too_small_for_one_request_rolls_back_with_vllms_estimate(real: RealRig) -> None:
    # the flag alone: VLLM_CPU_KVCACHE_SPACE would win over it on the CPU build
    real.add_tiny(
        "kv-small",
        env=ENV.replace('VLLM_CPU_KVCACHE_SPACE = "1"\n', ""),
        max_model_len=32768,
        kv_cache_memory_bytes=16 * 1024 * 1024,
    )
    done = real.rigctl("switch", "kv-small", timeout=600)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "kv-small failed: max_model_len 32,768 needs more KV cache than fits; vLLM estimates 16,256 fits" in done.stderr
    assert "rolled back: tiny serves again" in done.stderr
    # the KV size was set: raising gpu_memory_utilization would change nothing, and is not suggested
    assert "fix: set max_model_len to 16,256 or less, or raise the KV size you set" in done.stdout
    assert real.status()["active_profile"] == "tiny"
    # the advisor saw it coming: one 32,768-token request does not fit 16 MiB of KV
    (layout,) = json.loads(real.rigctl("fit", "kv-small", "--json").stdout)["layouts"]
    assert layout["fits"] is False and layout["why_not"].startswith("one 32,768-token request needs ")
    real.check_invariants()


def test_a_max_model_len_over_the_models_maximum_is_named_as_that(real: RealRig) -> None:
    real.add_tiny("too-long", max_model_len=40000)
    done = real.rigctl("switch", "too-long", timeout=600)
    assert done.returncode == 3, done.stdout + done.stderr
    assert (
        "too-long failed: max_model_len 40,000 is more than the model allows (max_position_embeddings 32,768 in its config.json)"
    ) in done.stderr
    assert "pydantic" not in done.stderr and "rolled back: tiny serves again" in done.stderr
    real.check_invariants()


def test_a_flag_the_served_version_does_not_know_is_refused_before_anything_stops(real: RealRig) -> None:
    pid = real.record()["pid"]
    real.add_tiny("newer", disable_prefix_caching=True)  # 0.33's spelling; 0.32 has --no-enable-prefix-caching
    done = real.rigctl("switch", "newer")
    assert done.returncode == 2
    assert (
        "disable_prefix_caching: not a vllm serve option of vLLM 0.32.0 (vLLM 0.33.0 has it); did you mean enable_prefix_caching?"
    ) in done.stderr
    assert real.record()["pid"] == pid
    real.add_tiny("older", enable_prefix_caching=False)
    argv = real.rigctl("profile", "argv", "older")
    assert f"{VLLM} serve" in argv.stdout and "--no-enable-prefix-caching" in argv.stdout


def test_a_port_taken_by_another_program_is_refused_before_anything_stops(real: RealRig) -> None:
    pid = real.record()["pid"]
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        busy = other.getsockname()[1]
        real.add_tiny("elsewhere", port=busy)
        done = real.rigctl("switch", "elsewhere")
    assert done.returncode == 3 and f"port {busy} is held by pid {os.getpid()}" in done.stderr
    assert "tiny keeps serving" in done.stderr and real.record()["pid"] == pid


def test_refresh_options_builds_the_bundled_0_32_table_from_the_real_parser(real: RealRig) -> None:
    python = os.path.join(os.path.dirname(VLLM), "python")
    done = real.rigctl("profile", "refresh-options", "--python", python, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "vLLM 0.32.0: 316 options written to" in done.stdout
    written = json.loads((real.config_dir / "vllm_options" / "0.32.0.json").read_text())
    assert sum(o["kind"] == "bool" for o in written["options"].values()) == 88
    validated = real.rigctl("profile", "validate", "tiny")
    assert validated.returncode == 0 and "checked against vLLM 0.32.0 options (refreshed)" in validated.stderr


def test_a_stop_during_the_boot_kills_what_ignores_sigterm(real: RealRig) -> None:
    assert real.rigctl("stop", timeout=120).returncode == 0
    switch = real.popen("switch", "tiny")
    real.wait_for(switch, "tiny: arguments parsed", timeout=120)
    switch.send_signal(signal.SIGKILL)  # the rigctl that started it is gone; the boot goes on
    switch.wait()
    started = time.monotonic()
    done = real.rigctl("stop", timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    assert "still booting, and vLLM ignores SIGTERM until it is ready: SIGKILL after 5 s" in done.stdout
    assert "stopped tiny" in done.stdout and took < 20
    assert not real.started_servers()  # nothing left running
    assert real.listener_pid() is None
