"""One card per GPU: VRAM and power bars, utilisation, temperature, clocks, PCIe, history."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from rigctl import fmt
from rigctl.gpu.model import Gpu, GpuSample
from rigctl.history import RingBuffer
from rigctl.tui.format import level, power_fraction, short_name, temperature_level, vram_fraction
from rigctl.tui.widgets.meter import Meter
from rigctl.tui.widgets.spark import Spark

HISTORY = 120


class GpuCard(Vertical):
    """Renders the GPU it is given; never reads a backend itself."""

    def __init__(self, gpu: Gpu) -> None:
        super().__init__(id=f"gpu-card-{gpu.index}", classes="gpu-card")
        self.gpu = gpu
        self.border_title = f"GPU{gpu.index} {short_name(gpu.name)}"
        self._power = RingBuffer(HISTORY)
        self._util = RingBuffer(HISTORY)
        self.last_sample: GpuSample | None = None

    def compose(self) -> ComposeResult:
        yield Meter("VRAM", id="vram")
        yield Meter("PWR ", id="power")
        yield Static("", id="stats", classes="card-line")
        yield Static("", id="clocks", classes="card-line")
        with Horizontal(classes="sparks"):
            yield Spark("W", self.gpu.power_limit_w or 0.0, id="spark-power")
            yield Spark("%", 100.0, id="spark-util")

    def _set_line(self, selector: str, text: str) -> None:
        line = self.query_one(selector, Static)
        if str(line.content) != text:  # skip repaints when nothing changed
            line.update(text)

    def show(self, sample: GpuSample) -> None:
        self.last_sample = sample
        gpu = self.gpu
        self.set_class(sample.lost, "-lost")
        vram, power = self.query_one("#vram", Meter), self.query_one("#power", Meter)
        if sample.lost:
            vram.fraction = power.fraction = None
            vram.text = power.text = "LOST"
            self._set_line("#stats", "GPU is lost: reset or reboot")
            self._set_line("#clocks", "")
            return
        vf = vram_fraction(gpu, sample)
        used = None if sample.memory_used is None else sample.memory_used + (sample.memory_reserved or 0)
        vram.fraction, vram.text = vf, fmt.gib_pair(used, gpu.memory_total)
        vram.set_classes(level(vf, warn=0.9, hot=0.97))
        pf = power_fraction(gpu, sample)
        power.fraction, power.text = pf, f"{fmt.watts(sample.power_w)}/{fmt.watts(gpu.power_limit_w)}"
        power.set_classes(level(pf, warn=0.9, hot=0.98))
        temp_class = temperature_level(sample.temperature_c)
        stats = self.query_one("#stats", Static)
        stats.set_classes(f"card-line {temp_class}")
        self._set_line("#stats", f"util {fmt.pct(sample.util_gpu)}  {fmt.celsius(sample.temperature_c)}"
                                 f"  fan {fmt.pct(sample.fan_pct)}  P{sample.pstate if sample.pstate is not None else '?'}")
        link = f"{fmt.pcie(sample.pcie_gen, sample.pcie_width)}/{fmt.pcie(gpu.pcie_gen_max, gpu.pcie_width_max)}"
        self._set_line("#clocks", f"SM {fmt.mhz(sample.sm_clock)}  PCIe {link.replace('Gen', 'G').replace(' x', 'x')}")
        self._power.push(sample.power_w)
        self._util.push(sample.util_gpu)
        self.query_one("#spark-power", Spark).data = self._power.snapshot()
        self.query_one("#spark-util", Spark).data = self._util.snapshot()
