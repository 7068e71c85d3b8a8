"""How the trends screen draws its charts, chosen by measurement: rigctl's block charts
(rigctl/tui/chart.py, text lines a LinesWidget-like Static shows) against textual-plotext
(plotext drawing into a Textual widget), in the same run.

  import  seconds to import what the screen needs in an interpreter that has imported
          `textual.app` already (what a user pays when the screen's module loads), median of 7
  draw    CPU seconds to draw the screen's six charts once (what every reload and resize costs
          while the screen is open), median of 30, at the widths of 80x24, 120x40 and 200x60
          screens, each chart 720 points (a 30-day window at one point an hour) with gaps

The CPU of the screen open in the real app, against the Textual floor, is bench_tui.py's
(--only peers). Needs textual-plotext: pip install -e '.[bench]'.

Run:  python benchmarks/bench_chart.py
Prints figures; asserts nothing.
"""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import figure  # benchmarks/ is not a package: its own directory on the path

FIGURES = 6  # the trends screen's charts
POINTS = 720
LINES = {"rigctl": 3, "plotext": 5}  # plotext needs axes and ticks around a plot: its least legible height
WIDTHS = (78, 118, 198)


def series(seed: int) -> list[float | None]:
    """A day-shaped figure with an outage (None: no data recorded) in the middle."""
    return [None if POINTS // 2 <= i < POINTS // 2 + 30 else 50 + 40 * math.sin(i / 24 + seed) for i in range(POINTS)]


def import_cost(module: str, runs: int = 7) -> float:
    """Seconds to import `module` in a fresh interpreter that has already imported textual.app (so
    only what the module adds is timed, not the interpreter's start), median of `runs`."""
    code = f"import time, textual.app\nstart = time.perf_counter()\nimport {module}\nprint(time.perf_counter() - start)"

    def once() -> float:
        done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
        return float(done.stdout.strip())

    return statistics.median(once() for _ in range(runs))


def draw_cpu(draw: Callable[[int], object], width: int, runs: int = 30) -> float:
    draw(width)  # warm: caches, first-call imports
    samples = []
    for _ in range(runs):
        start = time.process_time()
        draw(width)
        samples.append(time.process_time() - start)
    return statistics.median(samples)


def rigctl_draw(width: int) -> object:
    from rigctl.tui.chart import chart

    return [chart(series(seed), width, LINES["rigctl"], 100.0) for seed in range(FIGURES)]


def plotext_draw(width: int) -> object:
    import plotext as plt  # what textual-plotext's PlotextPlot calls on every render

    out = []
    for seed in range(FIGURES):
        values = series(seed)
        plt.clear_figure()
        plt.plotsize(width, LINES["plotext"] + 3)
        xs = [i for i, v in enumerate(values) if v is not None]
        plt.plot(xs, [values[i] for i in xs], marker="braille")
        out.append(plt.build())
    return out


def main() -> None:
    try:
        import textual_plotext  # noqa: F401
    except ImportError:
        print("textual-plotext is not installed (pip install -e '.[bench]'): nothing to compare")
        return
    print(f"python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d %H:%M')}")
    chart = import_cost("rigctl.tui.chart")
    ours = import_cost("rigctl.tui.screens.trends")
    theirs = import_cost("textual_plotext, plotext")
    print(f"import  beside textual.app: rigctl's charts (rigctl/tui/chart.py) {chart * 1000:.1f} ms")
    print(f"        rigctl's whole trends screen (charts, the record's reader, rigctl's core) {ours * 1000:.0f} ms")
    print(f"        textual_plotext and plotext {theirs * 1000:.0f} ms")
    figure("chart.import.rigctl", f"{chart * 1000:.1f} ms")
    figure("chart.import.plotext", f"{theirs * 1000:.0f} ms")
    draws = []
    for width in WIDTHS:
        mine, plot = draw_cpu(rigctl_draw, width), draw_cpu(plotext_draw, width)
        draws.append((mine, plot))
        print(
            f"draw    six charts of {POINTS} points, {width} columns: rigctl {mine * 1000:.2f} ms CPU, "
            f"plotext {plot * 1000:.2f} ms ({plot / mine:.1f}x)"
        )
    ours_ms, theirs_ms = [m * 1000 for m, _ in draws], [p * 1000 for _, p in draws]
    ratios = [p / m for m, p in draws]
    figure("chart.draw.rigctl", f"{min(ours_ms):.1f}-{max(ours_ms):.1f} ms")
    figure("chart.draw.plotext", f"{min(theirs_ms):.0f}-{max(theirs_ms):.0f} ms")
    figure("chart.draw.ratio", f"{min(ratios):.0f}-{max(ratios):.0f}x")


if __name__ == "__main__":
    main()
