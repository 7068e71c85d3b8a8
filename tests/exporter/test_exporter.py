"""rigctl exporter on the simulated rig, as real processes: what one scrape says equals what
`rigctl status --json` and the boot history say at the same moment, read back with
prometheus_client's own parser; served over HTTP on loopback; a non-loopback address taken only
from the command line; bad input in one line."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.faults.rig import Rig
from tests.support.serving import free_port
from tests.support.waiting import wait_until

Samples = dict[str, list[tuple[dict[str, str], float]]]


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    rig = Rig(tmp_path / "home")
    yield rig
    rig.rigctl("stop")


def scrape(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def one(samples: Samples, name: str, **labels: str) -> float:
    found = [v for got, v in samples.get(name, []) if all(got.get(k) == want for k, want in labels.items())]
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


def test_a_scrape_says_what_status_and_the_history_say(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    done = rig.rigctl("exporter", "--once", "--rig", "box1")
    assert done.returncode == 0, done.stderr
    samples = scrape(done.stdout)
    status = json.loads(rig.rigctl("status", "--json").stdout)
    boot = json.loads(rig.rigctl("history", "--json").stdout)[-1]

    assert all(labels["rig"] == "box1" for series in samples.values() for labels, _ in series)
    for gpu in status["rig"]["gpus"]:
        index, sample = str(gpu["index"]), gpu["sample"]
        assert one(samples, "rigctl_gpu_memory_total_bytes", gpu=index) == gpu["memory_total"]
        # vLLM's workers hold their memory fixed once booted: the two reads agree exactly
        used = sample["memory_used"] + (sample["memory_reserved"] or 0)
        assert one(samples, "rigctl_gpu_memory_used_bytes", gpu=index) == used
        assert one(samples, "rigctl_gpu_power_limit_watts", gpu=index) == gpu["power_limit_w"]
        assert one(samples, "rigctl_gpu_lost", gpu=index) == 0
        held = [labels for labels, _ in samples["rigctl_gpu_process_memory_bytes"] if labels["gpu"] == index]
        assert [h["vllm_role"] for h in held] == [f"worker TP{index}"]
    server = status["serving"]["server"]
    info = one(samples, "rigctl_serving_info", profile="good", served_model_name=",".join(server["served_model_names"]))
    assert info == 1 and one(samples, "rigctl_serving_up") == 1
    labels = next(labels for labels, _ in samples["rigctl_serving_info"])
    assert (labels["tp"], labels["dp"], labels["model"]) == ("2", "1", "Qwen/Qwen3.6-27B-AWQ")
    assert labels["vllm_version"] == boot["vllm_version"]
    assert one(samples, "rigctl_max_model_len", profile="good") == server["max_model_len"]
    assert one(samples, "rigctl_kv_pool_tokens", profile="good") == boot["kv_tokens"]
    assert one(samples, "rigctl_boot_duration_seconds", profile="good") == boot["boot_seconds"]
    assert one(samples, "rigctl_switch_state_info", status="serving", profile="good") == 1
    assert one(samples, "rigctl_watched") == 0 and "rigctl_alert" not in samples  # nothing watches: no alert series
    assert one(samples, "rigctl_hit_rate_regression", profile="good") == 0  # no record yet: nothing collapsed


def test_switches_are_counted_by_outcome_and_the_last_one_is_said(rig: Rig) -> None:
    rig.add_profile("crashes", '[env]\nRIGCTL_SIM_CRASH_AT = "load"\n')
    assert rig.rigctl("switch", "good").returncode == 0
    first = scrape(rig.rigctl("exporter", "--once", "--rig", "box1").stdout)
    assert one(first, "rigctl_switches_total", action="switch", outcome="switched") == 1
    assert one(first, "rigctl_last_switch_verified", target="good", failed="") == 1  # its chat check passed
    assert "rigctl_last_switch_drain_requests" not in first  # nothing served before it: nothing to drain
    assert rig.rigctl("switch", "crashes").returncode == 3
    samples = scrape(rig.rigctl("exporter", "--once", "--rig", "box1").stdout)
    assert one(samples, "rigctl_switches_total", action="switch", outcome="switched") == 1
    assert one(samples, "rigctl_switches_total", action="switch", outcome="rolled_back") == 1
    history = list(map(json.loads, (rig.state_dir / "switches.jsonl").read_text().splitlines()))
    assert one(samples, "rigctl_last_switch_timestamp_seconds", outcome="rolled_back", target="crashes") == history[-1]["when"]
    assert one(samples, "rigctl_last_switch_duration_seconds") == history[-1]["seconds"]
    assert one(samples, "rigctl_last_switch_drain_requests", result="running") == 0  # good was idle
    assert ("rigctl_last_switch_drain_requests", "finished") not in [
        (n, l.get("result")) for n, rows in samples.items() for l, _ in rows
    ]  # no front door: never seen finishing
    assert one(samples, "rigctl_last_switch_drain_requests", result="cut") == 0
    assert "rigctl_last_switch_verified" not in samples  # the crashed boot was never verified
    # the same journal, headless
    shown = rig.rigctl("history", "--switches", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout) == history
    table = rig.rigctl("history", "--switches").stdout.splitlines()
    assert table[0].split() == ["when", "action", "to", "outcome", "took", "drain", "verified"]
    assert table[1].split()[2:5] == ["switch", "good", "switched"] and table[1].split()[-1] == "yes"
    assert table[2].split()[2:5] == ["switch", "crashes", "rolled_back"] and "none running" in table[2]


def test_engine_families_come_along_with_the_rig_label(rig: Rig) -> None:
    """--engine: every sample of the served vLLM's /metrics, as it wrote it, plus `rig`."""
    assert rig.rigctl("switch", "good").returncode == 0
    samples = scrape(rig.rigctl("exporter", "--once", "--rig", "box1", "--engine").stdout)
    direct = scrape(httpx.get(f"http://127.0.0.1:{rig.port}/metrics", timeout=5).text)
    assert one(samples, "rigctl_engine_metrics_up") == 1
    engine = {name: series for name, series in samples.items() if name.startswith("vllm:")}
    assert set(engine) == {name for name in direct if name.startswith("vllm:")} and engine
    for name, series in engine.items():
        assert all(labels["rig"] == "box1" for labels, _ in series), name
        label_sets = sorted(sorted((k, v) for k, v in labels.items() if k != "rig") for labels, _ in series)
        assert label_sets == sorted(sorted(labels.items()) for labels, _ in direct[name]), name
    # what holds still between the two reads: the served pool's configuration, labels and all
    assert samples["vllm:cache_config_info"] == [({**labels, "rig": "box1"}, v) for labels, v in direct["vllm:cache_config_info"]]
    nothing = Rig(rig.home.parent / "idle")
    idle = scrape(nothing.rigctl("exporter", "--once", "--engine").stdout)
    assert one(idle, "rigctl_engine_metrics_up") == 0 and not any(name.startswith("vllm:") for name in idle)


def test_nothing_serving_is_said_as_zero_not_as_missing_gpus(rig: Rig) -> None:
    samples = scrape(rig.rigctl("exporter", "--once", "--rig", "box1").stdout)
    assert one(samples, "rigctl_serving_up") == 0 and "rigctl_serving_info" not in samples
    assert len(samples["rigctl_gpu_memory_total_bytes"]) == 2


def test_served_over_http_on_loopback_and_stopped_by_sigterm(rig: Rig) -> None:
    assert rig.rigctl("switch", "good").returncode == 0
    port = free_port()
    proc = rig.popen("exporter", "--listen", f"127.0.0.1:{port}", "--rig", "box1")
    try:
        rig.wait_for(proc, f"serving rig 'box1' on http://127.0.0.1:{port}/metrics")
        answer = wait_until("a scrape", lambda: _get(f"http://127.0.0.1:{port}/metrics"), proc)
        assert answer.headers["content-type"].startswith("text/plain")
        assert one(scrape(answer.text), "rigctl_serving_up") == 1
        proc.send_signal(signal.SIGTERM)
        code, out = rig.finish(proc)
        assert code == 0 and "rigctl exporter: stopped" in out
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_scrape_is_answered_beside_idle_and_half_sent_connections(rig: Rig) -> None:
    """Every slot held by a connection that sends nothing or half a request line: the scrape is
    still answered, the oldest silent one giving way to it."""
    import socket

    from rigctl.exporter.server import CONNECTIONS

    port = free_port()
    proc = rig.popen("exporter", "--listen", f"127.0.0.1:{port}")
    hostile: list[socket.socket] = []
    try:
        rig.wait_for(proc, f"on http://127.0.0.1:{port}/metrics")
        for i in range(CONNECTIONS + 8):
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            if i % 2:
                sock.sendall(b"GET /metr")  # half a request line, then nothing
            hostile.append(sock)
        for _ in range(3):
            answer = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30)
            assert answer.status_code == 200 and "rigctl_serving_up" in answer.text
        assert hostile[0].recv(1) == b""  # the oldest gave way
    finally:
        for sock in hostile:
            sock.close()
        proc.kill()
        proc.wait()


def _get(url: str) -> httpx.Response | None:
    try:
        return httpx.get(url, timeout=5)
    except httpx.TransportError:
        return None


def test_an_address_beyond_loopback_only_from_the_command_line(rig: Rig) -> None:
    rig.write_config('[exporter]\nlisten = "0.0.0.0:9477"\n')
    done = rig.rigctl("exporter", "--once")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert "exporter.listen: refusing to serve the rig's state on 0.0.0.0 from the config" in line
    assert "rigctl exporter --listen 0.0.0.0:9477" in line and str(rig.config_dir / "config.toml") in line
    # said on the command line, it is meant (--once binds nothing: the check is the same)
    assert rig.rigctl("exporter", "--once", "--listen", "0.0.0.0:9477").returncode == 0


@pytest.mark.parametrize("listen", ["9477", "127.0.0.1:", "127.0.0.1:99999", ":9477"])
def test_a_bad_listen_is_one_line(rig: Rig, listen: str) -> None:
    done = rig.rigctl("exporter", "--once", "--listen", listen)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("rigctl: --listen: ") and "must be HOST:PORT" in line


def test_a_port_taken_is_one_line(rig: Rig) -> None:
    port = free_port()
    first = rig.popen("exporter", "--listen", f"127.0.0.1:{port}")
    try:
        rig.wait_for(first, "serving rig")
        done = rig.rigctl("exporter", "--listen", f"127.0.0.1:{port}")
        assert done.returncode == 2
        (line,) = done.stderr.strip().splitlines()
        assert f"cannot listen on 127.0.0.1:{port}" in line
    finally:
        first.send_signal(signal.SIGTERM)
        rig.finish(first)


def test_rigs_without_a_prometheus_or_with_one_that_is_gone_is_one_line(rig: Rig) -> None:
    done = rig.rigctl("rigs")
    assert done.returncode == 2 and done.stderr.strip() == (
        "rigctl: rigctl rigs needs a Prometheus: --prometheus URL, or [prometheus] url in config.toml"
    )
    gone = rig.rigctl("rigs", "--prometheus", f"http://127.0.0.1:{free_port()}")
    assert gone.returncode == 1
    (line,) = gone.stderr.strip().splitlines()
    assert line.startswith("rigctl: Prometheus at http://127.0.0.1:") and "did not answer" in line
