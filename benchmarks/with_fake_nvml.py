"""Run a program that uses pynvml (rigctl, nvitop, gpustat) on the test suite's fake libnvidia-ml.

    python benchmarks/with_fake_nvml.py RIG -m MODULE [ARGS...]

Only the C library is replaced (tests/support/fake_nvml.py), so every pynvml wrapper each
program calls runs for real; the figures drift once a second (power, utilisation, clocks,
temperature) so a dashboard has something to redraw, as on a real rig. Every program measured
this way pays the same driver, which makes their costs comparable.
"""

from __future__ import annotations

import math
import runpy
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rigctl.sim.rigspec import load_rig
from tests.support.fake_nvml import FakeNvmlLib, installed


def drift(lib: FakeNvmlLib) -> None:
    start = time.monotonic()
    while True:
        t = time.monotonic() - start
        for index, live in enumerate(lib.live):
            wave = 0.5 + 0.5 * math.sin(t / 7 + index)
            live.power_mw = int((120 + 200 * wave) * 1000)
            live.util_gpu = int(100 * wave)
            live.util_memory = int(60 * wave)
            live.temperature = int(45 + 25 * wave)
            live.sm_clock = int(1400 + 400 * wave)
            live.energy_mj += live.power_mw  # a second of it
        time.sleep(1.0)


def main() -> None:
    if len(sys.argv) < 4 or sys.argv[2] != "-m":
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    rig, module, args = sys.argv[1], sys.argv[3], sys.argv[4:]
    lib = FakeNvmlLib(load_rig(rig))
    for gpu in lib.live:
        gpu.memory_used = 20 * 2**30  # a serving vLLM's worth
    threading.Thread(target=drift, args=(lib,), daemon=True).start()
    sys.argv = [module, *args]
    with installed(lib):
        runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
