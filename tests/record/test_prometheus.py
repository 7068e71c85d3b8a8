"""The Prometheus path against a real Prometheus server (the Debian package's binary, started by
the test on 127.0.0.1) scraping the simulator under load, beside rigctl's own recorder: the
report from Prometheus tells what the report from the record tells."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.record.test_recorder_sim import RecordRig, wait_rows
from tests.support.serving import free_port

PROMETHEUS = shutil.which("prometheus")
needs_prometheus = pytest.mark.skipif(
    PROMETHEUS is None, reason="no prometheus binary (apt-get install prometheus; .ci/run installs it)"
)


def start_prometheus(home: Path, target_port: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    config = home / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: vllm\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{target_port}']\n"
    )
    assert PROMETHEUS is not None
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={home / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise AssertionError("prometheus did not become ready")


def scraped(url: str) -> None:
    """Prometheus has scraped the simulator at least once."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = httpx.get(f"{url}/api/v1/query", params={"query": 'up{job="vllm"}'}, timeout=5).json()
        if any(r["value"][1] == "1" for r in answer["data"]["result"]):
            return
        time.sleep(0.3)
    raise AssertionError("prometheus never scraped the simulator")


@needs_prometheus
def test_the_report_from_prometheus_agrees_with_the_record(tmp_path: Path) -> None:
    rig = RecordRig(tmp_path / "home")
    prometheus = None
    try:
        assert rig.rigctl("start", "good").returncode == 0
        prometheus, url = start_prometheus(tmp_path, rig.port)
        scraped(url)
        began = time.time()
        recorder = rig.recorder()
        rig.wait_for(recorder, "recording to")
        time.sleep(2)  # both have a sample of the idle engine before the first request: both see all of the load
        rig.load.start()
        wait_rows(rig, "good", 12)
        rig.load.stop()
        time.sleep(3)  # the last requests finish and are scraped
        recorder.send_signal(signal.SIGTERM)
        assert rig.finish(recorder)[0] == 0
        ended = time.time()
        rig.write_config(f'[server]\nstop_grace = 3\n[record]\ninterval = 1\n[prometheus]\nurl = "{url}"\n')
        window = (
            "--since",
            time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(began - 5)),
            "--until",
            time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(ended + 1)),
        )
        theirs = rig.rigctl("report", "--json", *window)  # auto: Prometheus, as it is configured
        ours = rig.rigctl("report", "--json", "--source", "record", *window)
        assert theirs.returncode == 0 and ours.returncode == 0, theirs.stderr + ours.stderr
        (p,) = json.loads(theirs.stdout)["profiles"]
        (r,) = json.loads(ours.stdout)["profiles"]
        assert json.loads(theirs.stdout)["source"] == "prometheus"
        assert p["profile"] == r["profile"] == "good"  # tagged by the boot in history.jsonl
        assert p["pool_tokens"] == r["pool_tokens"] > 0
        assert p["requests"] > 0 and 0.6 <= p["requests"] / r["requests"] <= 1.5
        assert abs(p["prefix_hit_rate"] - r["prefix_hit_rate"]) < 0.1, (p, r)
        assert p["ttft_mean_s"] == pytest.approx(r["ttft_mean_s"], rel=0.5)
        bad = rig.rigctl("report", "--source", "prometheus", env={"RIGCTL_CONFIG": str(tmp_path / "none.toml")})
        assert bad.returncode == 2 and "needs [prometheus] url" in bad.stderr
    finally:
        rig.load.stop()
        if prometheus is not None:
            prometheus.send_signal(signal.SIGTERM)
            prometheus.wait(30)
        rig.cleanup()


def test_an_unreachable_prometheus_is_one_line(tmp_path: Path) -> None:
    rig = RecordRig(tmp_path / "home")
    try:
        rig.write_config(f'[prometheus]\nurl = "http://127.0.0.1:{free_port()}"\n')
        done = rig.rigctl("report")
        assert done.returncode == 1 and done.stderr.startswith("rigctl: Prometheus at http://127.0.0.1:")
        assert done.stderr.count("\n") == 1
    finally:
        rig.cleanup()
