"""What `rigctl exporter` costs beside vLLM, against nvitop-exporter on the same fake libnvidia-ml
(benchmarks/with_fake_nvml.py: the real pynvml above it), both scraped by this script as
Prometheus would, in the same run.

  idle    CPU per wall second with nothing scraping (rigctl reads at scrape time; nvitop-exporter
          polls every --interval, 1 s by default)
  15s/1s  CPU per wall second scraped every 15 s (Prometheus's default) and every 1 s
  scrape  CPU a scrape: the CPU per second scraped every second less the CPU per second with
          nothing scraping (psutil's clock ticks are 10 ms: too coarse to time one scrape), and
          the scrape's size; rigctl with its simulated vLLM serving (the serving series,
          /health and /v1/models asked each scrape), the same with --engine (vLLM's /metrics
          read, parsed and served again each scrape), and with nothing serving

Needs nvitop-exporter (pip install -e '.[bench]'). Run: python benchmarks/bench_exporter.py [--seconds 30]
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tui import FAKE, Rig, _importable, _no_sim, cpu_seconds, free_port  # benchmarks/ on the path
from figures import figure


def started(argv: list[str], env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{argv[-4:]} never answered on port {port}")


def measure(proc: subprocess.Popen[bytes], port: int, seconds: float, every: float | None) -> tuple[float, int]:
    """(CPU per wall second, bytes a scrape) over `seconds`, scraped every `every` s (None: never)."""
    process = psutil.Process(proc.pid)
    start, before = time.monotonic(), cpu_seconds(process)
    size = 0
    while time.monotonic() - start < seconds:
        if every is None:
            time.sleep(0.5)
            continue
        size = len(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).content)
        time.sleep(every)
    used = cpu_seconds(process) - before
    return used / (time.monotonic() - start), size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    if not _importable("nvitop_exporter"):
        print("nvitop-exporter is not installed (pip install -e '.[bench]'): nothing to compare")
        return
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}")
    rig = Rig(load=False)
    try:
        env = _no_sim(rig.env)
        idle_env = {**env, "RIGCTL_STATE_DIR": str(rig.home / "idle-state")}
        ports = {name: free_port() for name in ("rigctl", "rigctl-engine", "rigctl-idle", "nvitop")}
        exporters = {
            "rigctl exporter, serving": started(
                [*FAKE, "rigctl", "exporter", "--listen", f"127.0.0.1:{ports['rigctl']}"], env, ports["rigctl"]
            ),
            "rigctl exporter --engine, serving": started(
                [*FAKE, "rigctl", "exporter", "--engine", "--listen", f"127.0.0.1:{ports['rigctl-engine']}"],
                env,
                ports["rigctl-engine"],
            ),
            "rigctl exporter, nothing serving": started(
                [*FAKE, "rigctl", "exporter", "--listen", f"127.0.0.1:{ports['rigctl-idle']}"], idle_env, ports["rigctl-idle"]
            ),
            "nvitop-exporter --interval 1": started(
                [*FAKE, "nvitop_exporter", "--bind-address", "127.0.0.1", "--port", str(ports["nvitop"])],
                dict(os.environ),
                ports["nvitop"],
            ),
        }
        port_of = dict(zip(exporters, ports.values(), strict=True))
        results: dict[str, dict[str, tuple[float, int]]] = {name: {} for name in exporters}
        for label, every in (("idle", None), ("15s", 15.0), ("1s", 1.0)):
            for name, proc in exporters.items():  # one after the other: each measured alone
                results[name][label] = measure(proc, port_of[name], args.seconds, every)
        for proc in exporters.values():
            proc.terminate()
            proc.wait(30)
    finally:
        rig.close()
    for name, by in results.items():
        idle, slow, fast = by["idle"], by["15s"], by["1s"]
        print(
            f"{name}: idle {idle[0] * 100:.2f}% of a core; scraped every 15 s {slow[0] * 100:.2f}%, every 1 s "
            f"{fast[0] * 100:.2f}%; {max(0.0, fast[0] - idle[0]) * 1000:.1f} ms CPU a scrape, {fast[1] / 1024:.1f} KiB"
        )
    key = {
        "rigctl exporter, serving": "rigctl",
        "rigctl exporter --engine, serving": "rigctl_engine",
        "rigctl exporter, nothing serving": "rigctl_idle",
        "nvitop-exporter --interval 1": "nvitop",
    }
    for name, by in results.items():
        figure(f"exporter.{key[name]}.idle", f"{by['idle'][0] * 100:.2f}%")
        figure(f"exporter.{key[name]}.15s", f"{by['15s'][0] * 100:.2f}%")
        figure(f"exporter.{key[name]}.1s", f"{by['1s'][0] * 100:.2f}%")
        figure(f"exporter.{key[name]}.scrape", f"{max(0.0, by['1s'][0] - by['idle'][0]) * 1000:.1f} ms")
    theirs = results["nvitop-exporter --interval 1"]["15s"][0]
    ours = results["rigctl exporter, serving"]["15s"][0]
    print(f"at Prometheus's default 15 s: rigctl exporter (serving) / nvitop-exporter {ours / theirs:.2f}x")
    figure("exporter.ratio_15s", f"{ours / theirs:.2f}x")
    engine = results["rigctl exporter --engine, serving"]
    figure("exporter.rigctl_engine.size", f"{engine['1s'][1] / 1024:.0f} KiB")
    figure("exporter.rigctl.size", f"{results['rigctl exporter, serving']['1s'][1] / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
