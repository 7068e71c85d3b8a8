"""CPU cost of one rig snapshot, per simulated rig and for the NVML adapter on the fake
NVML library (the real pynvml wrappers, ctypes structs and all, minus the driver).

Run:  python benchmarks/bench_rig_snapshot.py [--n 2000]
Prints CPU milliseconds (user+system of this process) per snapshot; no assertions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/: figures
from figures import figure

from rigctl.gpu.nvml import NvmlBackend
from rigctl.gpu.sampler import RigSampler
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig, rig_names
from tests.support.fake_nvml import FakeNvmlLib, installed


def cpu_ms_per_call(fn, n: int) -> float:
    fn()  # warm caches (process names, function pointers)
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) * 1000 / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    print(f"CPU ms per rig snapshot (mean of {args.n}, process_time)")
    print(f"{'backend':<28}{'backend.sample()':>18}{'full snapshot':>16}")
    for name in rig_names():
        backend = SimulatedBackend(load_rig(name))
        sampler = RigSampler(backend)
        full = cpu_ms_per_call(sampler.snapshot, args.n)
        print(f"{'sim:' + name:<28}{cpu_ms_per_call(backend.sample, args.n):>18.3f}{full:>16.3f}")
        if name == "2x3090-nvlink":
            figure("snapshot.sim", f"{full:.2f} ms")
    for name in ("2x3090-nvlink", "2x4090-pcie"):
        with installed(FakeNvmlLib(load_rig(name))):
            backend = NvmlBackend()
            sampler = RigSampler(backend)
            full = cpu_ms_per_call(sampler.snapshot, args.n)
            print(f"{'nvml(fake lib):' + name:<28}{cpu_ms_per_call(backend.sample, args.n):>18.3f}{full:>16.3f}")
            if name == "2x3090-nvlink":
                figure("snapshot.nvml", f"{full:.2f} ms")


if __name__ == "__main__":
    main()
