"""How long one `rigctl fit` takes (it should answer well under half a second), against a bare
interpreter start and `rigctl status --json` in the same run, and the advisor's own step.

  wall     a fresh `rigctl fit PROFILE --json --sim 2x4090-pcie` (the 27B hybrid's config in a
           Hugging Face cache laid out as the hub lays it out), median of 9
  step     the advisor in process (every layout, the recommendation), median of 200

Run:  python benchmarks/bench_fit.py
Prints figures and ratios; asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/: figures
from figures import figure  # noqa: E402


def wall_ms(argv: list[str], env: dict[str, str], runs: int = 9) -> float:
    def once() -> float:
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True)
        return (time.perf_counter() - start) * 1000

    once()  # warm the page cache
    return statistics.median(once() for _ in range(runs))


def main() -> None:
    from rigctl.fit.advise import FitInputs, layouts, recommend
    from rigctl.vllm.model import load_dims
    from rigctl.vllm.weights import estimate

    config = ROOT / "rigctl/vllm/configs/qwen3.6-27b.json"
    with tempfile.TemporaryDirectory() as home:
        snapshot = Path(home) / "hub/models--Qwen--Qwen3.6-27B-AWQ/snapshots/x"
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text(config.read_text())
        env = {
            **os.environ,
            "HF_HUB_CACHE": str(Path(home) / "hub"),
            "XDG_CONFIG_HOME": f"{home}/config",
            "XDG_STATE_HOME": f"{home}/state",
            "XDG_CACHE_HOME": f"{home}/cache",
        }
        rigctl = [sys.executable, "-m", "rigctl"]
        bare = wall_ms([sys.executable, "-c", "pass"], env)
        fit = wall_ms([*rigctl, "fit", "qwen36-27b-4090-tp2-mtp", "--json", "--sim", "2x4090-pcie"], env)
        status = wall_ms([*rigctl, "status", "--json", "--sim", "2x4090-pcie"], env)
    dims = load_dims(config)
    inputs = FitInputs(
        dims,
        estimate(dims, "int4"),
        (24 * 2**30, 24 * 2**30),
        max_model_len=32768,
        spec_tokens=3,
        kv_cache_dtype="fp8",
        max_num_seqs=8,
    )
    steps = []
    for _ in range(200):
        start = time.perf_counter()
        recommend(inputs, layouts(inputs))
        steps.append((time.perf_counter() - start) * 1e6)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}")
    print(
        f"rigctl fit PROFILE --json: {fit:.0f} ms wall ({fit / bare:.1f}x a bare interpreter's {bare:.0f} ms; "
        f"rigctl status --json: {status:.0f} ms)"
    )
    print(f"the advisor's step (3 layouts and the rule): {statistics.median(steps):.0f} us")
    figure("fit.wall", f"{fit:.0f} ms")
    figure("fit.bare", f"{bare:.0f} ms")
    figure("fit.status", f"{status:.0f} ms")
    figure("fit.step", f"{statistics.median(steps):.0f} us")


if __name__ == "__main__":
    main()
