"""One card per GPU: VRAM and power bars, utilisation, temperature, clocks, the PCIe link and its
traffic with NVLink's (during a TP decode: the all-reduce), history.

One widget that renders its five lines itself: a card of six child widgets cost six style
and render passes a second, which was most of the TUI's CPU beside vLLM.
"""

from __future__ import annotations

from rich.text import Text
from textual.content import Content

from rigctl import fmt
from rigctl.gpu.model import Gpu, GpuSample, nvlink_rates
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

    DEFAULT_CSS = "GpuCard { height: 8; }"

    def __init__(self, gpu: Gpu) -> None:
        super().__init__(id=f"gpu-card-{gpu.index}", classes="gpu-card")
        self.gpu = gpu
        self.border_title = f"GPU{gpu.index} {short_name(gpu.name)}"
        self._power = RingBuffer(HISTORY)
        self._util = RingBuffer(HISTORY)
        self.texts: dict[str, str] = {}  # what each line says, for tests and the help's n/a notes
        self.fractions: dict[str, float | None] = {}
        self.sample: GpuSample | None = None
        self._before: GpuSample | None = None  # the reading before: NVLink's counters make a rate of two
        self._holders = ""

    def show(self, sample: GpuSample, fresh: bool = True) -> None:
        """`fresh`: a new reading, which joins the history (a redraw of the last one does not)."""
        self.set_class(sample.lost, "-lost")
        if fresh and not sample.lost:
            self._power.push(sample.power_w)
            self._util.push(sample.util_gpu)
            if self.sample is not None and not self.sample.lost:
                self._before = self.sample
        self._describe(sample)
        holders = self.holders(sample)
        if holders != self._holders:  # setting it repaints the whole card, borders and all
            self._holders = holders
            self.border_subtitle = Content(holders)  # plain text: a process name is never markup
        self.sample = sample
        self.update_lines()

    def _describe(self, sample: GpuSample) -> None:
        gpu = self.gpu
        if sample.lost:
            self.texts = {"vram": "LOST", "power": "LOST", "stats": "GPU is lost: reset or reboot", "clocks": "", "bus": ""}
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
            "bus": self._bus(sample),
        }
        self.fractions = {"vram": vram_fraction(gpu, sample), "power": power_fraction(gpu, sample)}

    @staticmethod
    def holders(sample: GpuSample) -> str:
        """Who holds the GPU, on the card's bottom border: the largest holder (its vLLM role where it
        is vLLM's) and how many more; P lists them all."""
        if sample.lost or sample.processes is None:
            return ""
        if not sample.processes:
            return "no processes"
        ranked = sorted(sample.processes, key=lambda p: -(p.used_memory or 0))
        top = ranked[0]
        who = top.vllm_role or (top.name or "?")[:18]
        more = f" +{len(ranked) - 1}" if len(ranked) > 1 else ""
        return f"{who} {fmt.gib(top.used_memory)}{more}"

    def _bus(self, sample: GpuSample) -> str:
        """PCIe and NVLink traffic, received and sent a second (↓ ↑); NVLink only where it is."""
        kb = 1000.0  # NVML's PCIe throughput is in KB/s
        rx = sample.pcie_rx_kbps * kb if sample.pcie_rx_kbps is not None else None
        tx = sample.pcie_tx_kbps * kb if sample.pcie_tx_kbps is not None else None
        line = f"PCIe ↓{fmt.rate(rx)} ↑{fmt.rate(tx)}"
        if self.gpu.active_nvlinks:
            nv_tx, nv_rx = nvlink_rates(self._before, sample)
            line += f"  NVL ↓{fmt.rate(nv_rx)} ↑{fmt.rate(nv_tx)}"
        return line + " B/s"

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
            Text(fit(self.texts["bus"], width), style="dim" if "n/a" in self.texts["bus"] else ""),
            spark_pair(
                self._power.snapshot(), self.gpu.power_limit_w or 0.0, self._util.snapshot(), width, theme_style(self.app, "accent")
            ),
        ]
