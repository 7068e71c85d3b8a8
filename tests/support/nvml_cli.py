"""Run the real `rigctl` CLI over the real pynvml, with a fake libnvidia-ml that fails on request.

    python -m tests.support.nvml_cli RIG SYMBOL[:GPU]=ERROR[,...] -- ARGS...

SYMBOL is a C function of libnvidia-ml (nvmlDeviceGetCount_v2, ...), GPU an index (omitted:
every GPU), ERROR a pynvml error name without NVML_ERROR_ (GPU_IS_LOST, NO_PERMISSION, UNKNOWN).
"""

from __future__ import annotations

import sys

import pynvml

from rigctl.cli import main
from rigctl.sim.rigspec import load_rig
from tests.support.fake_nvml import FakeNvmlLib, installed


def run(argv: list[str]) -> int:
    split = argv.index("--")
    rig, failures, args = argv[0], argv[1:split], argv[split + 1 :]
    lib = FakeNvmlLib(load_rig(rig))
    for spec in ",".join(failures).split(","):
        if not spec:
            continue
        target, _, error = spec.partition("=")
        symbol, _, gpu = target.partition(":")
        lib.fail(symbol, getattr(pynvml, f"NVML_ERROR_{error}"), gpu=int(gpu) if gpu else None)
    with installed(lib):
        return main(args)


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[1:]))
