"""Two simulated rigs, each with its own rigctl exporter, scraped by one real Prometheus (Debian's
package) with the rules `rigctl exporter --rules` prints loaded: Prometheus holds both rigs' joined
state; every rule's expression returns nothing for the healthy rig and the stall for the stalled
one, which fires as an alert; every query of the dashboard is answered, with data where there is."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from rigctl.config import Settings
from rigctl.exporter.rigs import rigs_view
from rigctl.rig_table import RemoteRig
from tests.faults.rig import Rig
from tests.support.serving import free_port
from tests.support.waiting import wait_until
from tests.watch.test_alerts_through_the_service import load

PROMETHEUS = shutil.which("prometheus")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(PROMETHEUS is None, reason="no prometheus binary (apt-get install prometheus; .ci/run installs it)"),
]


def query(url: str, expr: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{url}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert answer["status"] == "success", (expr, answer)
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/-/ready", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def rigs_in(result: list[dict[str, Any]]) -> set[str]:
    return {r["metric"].get("rig", "") for r in result}


@pytest.fixture
def two_rigs(tmp_path: Path) -> Iterator[tuple[Rig, Rig]]:
    alpha, beta = Rig(tmp_path / "alpha"), Rig(tmp_path / "beta")
    yield alpha, beta
    for rig in (alpha, beta):
        rig.rigctl("stop", "--no-drain")  # the stalled rig never finishes what it took


def test_one_prometheus_holds_both_rigs_and_the_rules_find_the_stalled_one(two_rigs: tuple[Rig, Rig], tmp_path: Path) -> None:
    alpha, beta = two_rigs
    named = (("alpha", alpha), ("beta", beta))
    for rig in (alpha, beta):
        rig.write_config("[server]\nstop_grace = 3\n[alerts]\nstall_s = 2\n")
    beta.add_profile("stalls", '[env]\nRIGCTL_SIM_STALL_AFTER = "2"\n')
    assert alpha.rigctl("switch", "good").returncode == 0
    assert beta.rigctl("switch", "stalls").returncode == 0
    rules = tmp_path / "rigctl.rules.yml"
    rules.write_text(beta.rigctl("exporter", "--rules").stdout)
    ports = {"alpha": free_port(), "beta": free_port()}
    exporters = [rig.popen("exporter", "--listen", f"127.0.0.1:{ports[name]}", "--rig", name) for name, rig in named]
    prometheus = None
    try:
        for proc in exporters:
            Rig.wait_for(proc, "serving rig")
        vllm_jobs = "".join(f"      - targets: ['127.0.0.1:{rig.port}']\n        labels: {{rig: {name}}}\n" for name, rig in named)
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files: ['{rules}']\n"
            "scrape_configs:\n"
            "  - job_name: rigctl\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{ports['alpha']}', '127.0.0.1:{ports['beta']}']\n"
            "  - job_name: vllm\n    static_configs:\n" + vllm_jobs
        )
        port = free_port()
        assert PROMETHEUS is not None
        prometheus = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=(tmp_path / "prometheus.log").open("wb"),
        )
        url = f"http://127.0.0.1:{port}"
        wait_until("prometheus ready", lambda: _ready(url), timeout=60)
        wait_until("both rigs' exporters scraped", lambda: rigs_in(query(url, "rigctl_serving_up == 1")) == {"alpha", "beta"})

        # the joined state: what serves on each, with its pool and the GPUs' memory
        served = {r["metric"]["rig"]: r["metric"]["profile"] for r in query(url, "rigctl_serving_info")}
        assert served == {"alpha": "good", "beta": "stalls"}
        assert rigs_in(query(url, "rigctl_kv_pool_tokens > 0")) == {"alpha", "beta"}
        assert len(query(url, "rigctl_gpu_memory_used_bytes")) == 4  # two GPUs a rig

        # traffic on both: alpha answers it, beta takes it and schedules none (stalled 2 s after its start)
        time.sleep(2.5)
        load(alpha.port, 4)
        stuck = load(beta.port, 3)
        firing = wait_until(
            "the stall firing in Prometheus",
            lambda: query(url, 'ALERTS{alertname="RigctlAdmissionStalled", alertstate="firing"}'),
            timeout=120,
        )
        assert rigs_in(firing) == {"beta"}
        for rule in json.loads(rules.read_text())["groups"][0]["rules"]:
            found = rigs_in(query(url, rule["expr"]))
            assert "alpha" not in found, (rule["alert"], found)  # the healthy rig: no rule holds
            assert found == ({"beta"} if rule["alert"] == "RigctlAdmissionStalled" else set()), (rule["alert"], found)

        # rigctl rigs reads both back from the same Prometheus
        done = alpha.rigctl("rigs", "--prometheus", url, "--json")
        assert done.returncode == 0, done.stderr
        rigs = {r["rig"]: r for r in json.loads(done.stdout)["rigs"]}
        assert set(rigs) == {"alpha", "beta"}
        assert (rigs["alpha"]["profile"], rigs["beta"]["profile"]) == ("good", "stalls")
        assert all(r["up"] and r["kv_pool_tokens"] > 0 and r["state"] == "serving" and r["tp"] == "2" for r in rigs.values())
        assert "RigctlAdmissionStalled" in rigs["beta"]["alerts"] and rigs["alpha"]["alerts"] == []
        assert rigs["alpha"]["power_w"] > 0 and rigs["alpha"]["max_model_len"] == 131072
        text = alpha.rigctl("rigs", "--prometheus", url).stdout
        assert (
            "alpha: serving good (" in text and "beta: serving stalls (" in text and "alerts firing: RigctlAdmissionStalled" in text
        )

        # the TUI's Rigs screen: the same rows, joined by name with the rigs [rigs.NAME] can drive
        view = rigs_view(Settings(prometheus_url=url, rigs=(RemoteRig("beta", "me@beta"), RemoteRig("gamma", "me@gamma"))))
        assert view.problem is None
        shown = {r.rig: (r.in_prometheus, r.ssh, r.profile) for r in view.rows}
        assert shown == {"alpha": (True, None, "good"), "beta": (True, "me@beta", "stalls"), "gamma": (False, "me@gamma", None)}

        # the dashboard: every query answered; data where the rigs have it
        board = json.loads(alpha.rigctl("exporter", "--grafana").stdout)
        answered = {t["expr"]: query(url, t["expr"].replace("$rig", ".*")) for p in board["panels"] for t in p["targets"]}
        with_data = {expr for expr, result in answered.items() if result}
        for family in (
            "rigctl_gpu_memory_used_bytes",
            "rigctl_gpu_power_watts",
            "rigctl_kv_pool_tokens",
            "vllm:kv_cache_usage_perc",
        ):
            assert any(expr.startswith(family) or f"({family}" in expr for expr in with_data), family
        del stuck
    finally:
        for proc in exporters:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        if prometheus is not None:
            prometheus.send_signal(signal.SIGTERM)
            prometheus.wait(30)
