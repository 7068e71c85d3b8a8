"""One card per GPU: VRAM and power bars, utilisation, temperature, clocks, PCIe, history.

One widget that renders its five lines itself: a card of six child widgets cost six style
and render passes a second, which was most of the TUI's CPU beside vLLM.
"""

from __future__ import annotations

from rich.text import Text

from rigctl import fmt
from rigctl.gpu.model import Gpu, GpuSample
from rigctl.tui.levels import (
    level,
    power_fraction,
    short_name,
    temperature_level,
    vram_fraction,
)
from rigctl.tui.ringbuffer import RingBuffer
from rigctl.tui.widgets.bars import level_style, meter_line, spark_pair, theme_style
from rigctl.tui.widgets.lines_widget import LinesWidget

HISTORY = 120


def fit(line: str, width: int) -> str:
    """Two spaces between figures where they fit, one where the card is narrow: never cut."""
    return line if len(line) <= width else line.replace("  ", " ")


class GpuCard(LinesWidget):
    """Renders the sample it is given; never reads a backend itself."""

    DEFAULT_CSS = "GpuCard { height: 7; }"

    def __init__(self, gpu: Gpu) -> None:
        super().__init__(id=f"gpu-card-{gpu.index}", classes="gpu-card")
        self.gpu = gpu
        self.border_title = f"GPU{gpu.index} {short_name(gpu.name)}"
        self._power = RingBuffer(HISTORY)
        self._util = RingBuffer(HISTORY)
        self.texts: dict[str, str] = {}  # what each line says, for tests and the help's n/a notes
        self.fractions: dict[str, float | None] = {}
        self.sample: GpuSample | None = None

    def show(self, sample: GpuSample, fresh: bool = True) -> None:
        """`fresh`: a new reading, which joins the history (a redraw of the last one does not)."""
        self.set_class(sample.lost, "-lost")
        if fresh and not sample.lost:
            self._power.push(sample.power_w)
            self._util.push(sample.util_gpu)
        self._describe(sample)
        self.sample = sample
        self.update_lines()

    def _describe(self, sample: GpuSample) -> None:
        gpu = self.gpu
        if sample.lost:
            self.texts = {"vram": "LOST", "power": "LOST", "stats": "GPU is lost: reset or reboot", "clocks": ""}
            self.fractions = {"vram": None, "power": None}
            return
        used = None if sample.memory_used is None else sample.memory_used + (sample.memory_reserved or 0)
        link = f"{fmt.pcie(sample.pcie_gen, sample.pcie_width)}/{fmt.pcie(gpu.pcie_gen_max, gpu.pcie_width_max)}"
        self.texts = {
            "vram": fmt.gib_pair(used, gpu.memory_total),
            "power": f"{fmt.watts(sample.power_w)}/{fmt.watts(gpu.power_limit_w)}",
            "stats": (
                f"util {fmt.pct(sample.util_gpu)}  {fmt.celsius(sample.temperature_c)}  fan "
                f"{fmt.pct(sample.fan_pct)}  P{sample.pstate if sample.pstate is not None else '?'}"
            ),
            "clocks": f"SM {fmt.mhz(sample.sm_clock)}  PCIe {link.replace('Gen', 'G').replace(' x', 'x')}",
        }
        self.fractions = {"vram": vram_fraction(gpu, sample), "power": power_fraction(gpu, sample)}

    def build_lines(self, width: int) -> list[Text]:
        sample = self.sample
        if sample is None:
            return [Text("waiting for the first sample...", style="dim")]
        vf, pf = self.fractions.get("vram"), self.fractions.get("power")
        return [
            meter_line("VRAM", vf, self.texts["vram"], width, level_style(self.app, level(vf, warn=0.9, hot=0.97))),
            meter_line("PWR ", pf, self.texts["power"], width, level_style(self.app, level(pf, warn=0.9, hot=0.98))),
            Text(fit(self.texts["stats"], width), style=level_style(self.app, temperature_level(sample.temperature_c))),
            Text(fit(self.texts["clocks"], width)),
            spark_pair(
                self._power.snapshot(), self.gpu.power_limit_w or 0.0, self._util.snapshot(), width, theme_style(self.app, "accent")
            ),
        ]
