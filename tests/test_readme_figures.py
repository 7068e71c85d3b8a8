"""The README's measured figures are written by the benchmarks that measure them
(benchmarks/readme_figures.py): every figure the README marks is one a benchmark prints, and the
rewrite replaces exactly the marked text."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


# What each placeholder of a figure key stands for: the loops that print them (bench_tui's peers
# and status peers, bench_metrics_parse's expositions, bench_http's imports, bench_exporter's
# exporters, bench_loadgen's clients).
PLACEHOLDERS = {
    "{keys[name]}": ("fake", "sim", "gpustat", "nvitop"),
    "{key[name]}": ("rigctl", "rigctl_engine", "rigctl_idle", "nvitop"),
    "{key}": ("gpu", "engine", "nvitop", "floor", "trends", "vllm_top", "small", "vllm033", "big", "rigctl", "httpx", "stdlib"),
    "{name}": ("rigctl", "aiohttp", "floor"),
    "{prefix}": ("capture.unpaced", "capture.paced"),
    "{args.figures}": ("paced",),
    "{who}": ("door", "nginx"),
    "{way}": ("dataclasses", "msgspec", "rules"),
}


def printed_keys() -> set[str]:
    """The keys the benchmarks' figure() calls print, their f-string parts expanded."""
    keys: set[str] = set()
    for source in (ROOT / "benchmarks").glob("bench_*.py"):
        for key in re.findall(r'figure\(f?"([^"]+)"', source.read_text()):
            holder = next((h for h in PLACEHOLDERS if h in key), None)
            keys |= {key.replace(holder, k) for k in PLACEHOLDERS[holder]} if holder else {key}
    return keys


def test_every_figure_the_readme_marks_is_one_a_benchmark_prints() -> None:
    pages = load("readme_figures").marked_files()
    assert ROOT / "README.md" in pages and ROOT / "docs" / "guide" / "costs.md" in pages
    marked = {key for page in pages for key in re.findall(r"<!--fig:([A-Za-z0-9_.-]+)-->", page.read_text())}
    assert len(marked) >= 40, "the guide's pages lost their figures' marks"
    assert marked <= printed_keys(), sorted(marked - printed_keys())


def test_the_rewrite_replaces_the_marked_text_only() -> None:
    readme_figures = load("readme_figures")
    text = "a <!--fig:x.cpu-->1.00%<!--/fig--> b <!--fig:y-->2 s<!--/fig--> c 1.00%"
    updated, changes, marked = readme_figures.rewrite(text, {"x.cpu": "0.90%", "z": "9"})
    assert updated == "a <!--fig:x.cpu-->0.90%<!--/fig--> b <!--fig:y-->2 s<!--/fig--> c 1.00%"
    assert changes == [("x.cpu", "1.00%", "0.90%")] and marked == {"x.cpu", "y"}
    figures = load("figures")
    assert figures.parse("FIGURE peers.gpu.cpu 0.96%\n") == ("peers.gpu.cpu", "0.96%")
    assert figures.parse("peers   rigctl: 0.96%") is None
