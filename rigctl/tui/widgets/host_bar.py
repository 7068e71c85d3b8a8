"""One line: which rig, host CPU, RAM and swap (vLLM pins host memory; swap is a warning)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigctl import fmt
from rigctl.tui.widgets.text_line import TextLine

if TYPE_CHECKING:
    from rigctl.gpu.model import RigSnapshot


def host_text(snapshot: RigSnapshot) -> str:
    host = snapshot.host
    rig = snapshot.info.backend
    if host is None:
        return f"{rig}  host n/a"
    load = "n/a" if host.load_avg is None else f"{host.load_avg[0]:.2f}"
    swap = fmt.gib_pair(host.swap_used, host.swap_total) if host.swap_total else "none"
    return f"{rig}  CPU {fmt.pct(host.cpu_pct)} load {load}  RAM {fmt.gib_pair(host.mem_used, host.mem_total)}  swap {swap}"


class HostBar(TextLine):
    def show(self, snapshot: RigSnapshot) -> None:
        text = host_text(snapshot)
        host = snapshot.host
        swapping = bool(host and host.swap_used and host.swap_total and host.swap_used > 256 * 1024 * 1024)
        self.set_class(swapping, "-warm")
        self.set_text(text)
