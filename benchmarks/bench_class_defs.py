"""What declaring an input's shape costs at import, the way `rigctl status` pays it: 40 frozen
classes of 6 fields (a status imports ~28 dataclasses), each way in a fresh interpreter, against
the interpreter alone; and rigctl's own rules module (plain classes). Issue 49 asked for msgspec
Structs or annotated dataclasses, "measure": this is the measure.

Run:  python benchmarks/bench_class_defs.py    (msgspec from `pip install -e '.[bench]'`)
Prints figures and ratios; asserts nothing.
"""

from __future__ import annotations

import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/: figures
from figures import figure

FIELDS = "    a: int\n    b: float\n    c: str\n    d: int = 0\n    e: float = 0.0\n    f: str = ''\n"
WAYS = {
    "bare": "import json\n",
    "dataclasses": "import json\nfrom dataclasses import dataclass\n"
    + "".join(f"@dataclass(frozen=True)\nclass C{i}:\n{FIELDS}" for i in range(40)),
    "msgspec": "import json\nimport msgspec\n" + "".join(f"class C{i}(msgspec.Struct, frozen=True):\n{FIELDS}" for i in range(40)),
    "rules": "import json\nimport rigctl.rules\n",
}


def wall(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> None:
    ways = {k: v for k, v in WAYS.items() if k != "msgspec" or importlib.util.find_spec("msgspec")}
    if "msgspec" not in ways:
        print("classes msgspec is not installed (pip install -e '.[bench]'): only dataclasses measured")
    for code in ways.values():
        wall(code)  # unmeasured: the bytecode cache
    runs: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(15):  # interleaved: a drift of the machine hits every way alike
        for name, code in ways.items():
            runs[name].append(wall(code))
    median = {name: statistics.median(times) for name, times in runs.items()}
    bare = median.pop("bare")
    print(f"classes a bare interpreter: {bare * 1000:.1f} ms (median of 15)")
    for way, value in median.items():
        print(f"        {way}: +{(value - bare) * 1000:.1f} ms over it")
        figure(f"classes.{way}", f"+{(value - bare) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
