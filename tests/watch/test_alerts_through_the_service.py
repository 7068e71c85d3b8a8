"""Every alert provoked on the simulated rig while `rigctl watch` runs, and seen where the owner
looks: the hook's stdin, `rigctl status` (and `status --check`'s degraded exit), the record
(`rigctl report`)."""

from __future__ import annotations

import json
import threading
import time

import httpx

from tests.support.waiting import wait_until
from tests.watch.harness import WatchRig, fired


def ask(port: int, model: str, prompt: str = "hello", tokens: int = 8, timeout: float = 120) -> None:
    try:
        httpx.post(
            f"http://127.0.0.1:{port}/v1/completions",
            json={"model": model, "prompt": prompt, "max_tokens": tokens, "ignore_eos": True},
            timeout=timeout,
        )
    except httpx.HTTPError:
        pass  # a stalled engine never answers: that is the fault


def load(port: int, count: int, prompt: str = "hello", tokens: int = 8) -> list[threading.Thread]:
    model = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=10).json()["data"][0]["id"]
    threads = [threading.Thread(target=ask, args=(port, model, f"{i} {prompt}", tokens), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    return threads


def status_alerts(rig: WatchRig) -> list[dict[str, object]]:
    data = json.loads(rig.rigctl("status", "--json").stdout)
    return list(data["alerts"]["firing"]) if data["alerts"] else []


def test_a_stalled_engine_alerts_in_status_check_the_record_and_the_hook(watch_rig: WatchRig) -> None:
    rig = watch_rig
    rig.configure("stall_s = 3\n")
    rig.add_profile("stalls", '[env]\nRIGCTL_SIM_STALL_AFTER = "2"\n')
    assert rig.rigctl("switch", "stalls").returncode == 0
    watch = rig.watch()
    wait_until("the service watching", lambda: (rig.state_dir / "alerts.json").is_file(), watch)
    assert "alerts: nothing watches" not in rig.rigctl("status").stdout
    time.sleep(2.5)  # the simulator stops scheduling 2 s after its engine started
    load(rig.port, 3)
    change = rig.wait_change("the stall alert on the hook's stdin", fired("stall"), watch)
    assert change["title"] == "admission stalled" and change["severity"] == "error" and change["profile"] == "stalls"
    assert "3 request(s) waiting and no token produced for " in change["text"] and change["host"]
    waited = int(change["text"].split("for ")[1].split(" s")[0])
    assert waited >= 3  # never before stall_s
    assert httpx.get(f"http://127.0.0.1:{rig.port}/health", timeout=5).status_code == 200  # the liveness probe is fooled
    # what status, status --check and status --json say
    text = rig.rigctl("status").stdout
    assert "  alert: admission stalled: 3 request(s) waiting" in text, text
    check = rig.rigctl("status", "--check", "--window", "0.5", "--json")
    verdict = json.loads(check.stdout)
    assert check.returncode == 8 and verdict["check"] == "degraded" and verdict["watched_by"] == watch.pid
    assert any("admission stalled" in r for r in verdict["reasons"]), verdict
    assert [a["kind"] for a in status_alerts(rig)] == ["stall"]
    # rigctl's own stop clears it, and says no engine died
    assert rig.rigctl("stop", "--no-drain").returncode == 0
    rig.wait_change("the stall cleared", fired("stall", "cleared"), watch)
    wait_until("nothing firing", lambda: not status_alerts(rig), watch)
    code, out = rig.stop_watch(watch)
    assert code == 0 and "rows written" in out and "Traceback" not in out, out
    assert not any(c["kind"] == "engine-died" for c in rig.changes())
    # the record keeps when it fired and cleared
    report = json.loads(rig.rigctl("report", "--json").stdout)
    assert [(e["kind"], e["state"]) for e in report["alerts"]] == [("stall", "fired"), ("stall", "cleared")]
    assert "FIRED    admission stalled" in rig.rigctl("report").stdout
    assert "alerts: nothing watches this rig" in rig.rigctl("status").stdout  # the service gone, so is its word


def test_queue_time_kv_full_and_a_preemption_storm_on_a_small_pool(watch_rig: WatchRig) -> None:
    rig = watch_rig
    rig.configure("queue_s = 1\nwindow_s = 10\npreemptions_per_min = 1\nkv_full_s = 0.5\n")
    # a 4,064-token pool a replica for 64 sequences: 64 requests of 600 tokens fill it, wait and are preempted
    body = "max_model_len = 2048\nkv_cache_memory_bytes = 150000000\nmax_num_seqs = 64\n"
    rig.add_profile("small", body, parent="qwen25-3b-dp2")
    assert rig.rigctl("switch", "small").returncode == 0
    watch = rig.watch()
    wait_until("the service watching", lambda: (rig.state_dir / "alerts.json").is_file(), watch)
    load(rig.port, 64, "word " * 100, tokens=500)
    for kind in ("kv-full", "preemptions", "queue"):
        change = rig.wait_change(f"the {kind} alert", fired(kind), watch, timeout=120)
        assert change["profile"] == "small" and change["severity"] == "warning", change
    rig.stop_watch(watch)
    kinds = {e["kind"] for e in json.loads(rig.rigctl("report", "--json").stdout)["alerts"]}
    assert {"kv-full", "preemptions", "queue"} <= kinds


def test_a_lost_gpu_and_thermal_throttling_from_the_simulated_driver(watch_rig: WatchRig) -> None:
    rig = watch_rig
    rig.configure("throttle_s = 1\n")
    assert rig.rigctl("switch", "good").returncode == 0
    watch = rig.watch()
    wait_until("the service watching", lambda: (rig.state_dir / "alerts.json").is_file(), watch)
    rig.gpu_faults({"lost": [1], "throttle": {"0": ["hw thermal"]}})
    lost = rig.wait_change("GPU1 lost", fired("gpu-lost"), watch)
    throttled = rig.wait_change("GPU0 throttled", fired("throttle"), watch)
    assert lost["key"] == "gpu1-lost" and "GpuIsLost" in lost["text"] and lost["severity"] == "error"
    assert throttled["key"] == "gpu0-throttle" and "hw thermal" in throttled["text"]
    assert {a["kind"] for a in status_alerts(rig)} == {"gpu-lost", "throttle"}
    rig.gpu_faults(None)
    rig.wait_change("GPU1 back", fired("gpu-lost", "cleared"), watch)
    rig.wait_change("GPU0 cool again", fired("throttle", "cleared"), watch)
    rig.stop_watch(watch)
    recorded = [(e["key"], e["state"]) for e in json.loads(rig.rigctl("report", "--json").stdout)["alerts"]]
    assert sorted(recorded) == sorted(
        [("gpu1-lost", "fired"), ("gpu0-throttle", "fired"), ("gpu1-lost", "cleared"), ("gpu0-throttle", "cleared")]
    )


def test_a_hook_that_fails_is_said_once_and_the_alerts_go_on(watch_rig: WatchRig) -> None:
    rig = watch_rig
    rig.configure("throttle_s = 0\n")
    rig.config.write_text(rig.config.read_text().replace(f'"{rig.hook}"', '"-c", "import sys; sys.exit(3)"'))
    assert rig.rigctl("switch", "good").returncode == 0
    watch = rig.watch()
    wait_until("the service watching", lambda: (rig.state_dir / "alerts.json").is_file(), watch)
    for _ in range(3):  # three fires, three clears: six failed runs of the hook
        rig.gpu_faults({"throttle": {"0": ["hw slowdown"]}})
        wait_until("throttling seen", lambda: any(a["kind"] == "throttle" for a in status_alerts(rig)), watch)
        rig.gpu_faults(None)
        wait_until("throttling cleared", lambda: not status_alerts(rig), watch)
    code, out = rig.stop_watch(watch)
    assert code == 0, out
    assert out.count("exited 3") == 1 and "said once until it works again" in out, out
    assert out.count("alert: GPU0 throttled") == 3, out  # the journal has every change all the same
