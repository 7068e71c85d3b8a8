"""alerts.json in the state dir: what fires now, written by the one process that watches (the
watch service, or a TUI recording alone), read by `rigctl status` and `status --check`. Trusted
only while its writer runs: a watcher that died leaves a file that says nothing."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from rigctl import jsonio, paths
from rigctl.alerts.model import Alert
from rigctl.atomic import write_text_atomic
from rigctl.proc import same_process, start_id


@dataclass(frozen=True)
class Firing:
    """Alerts firing now, as their watcher last wrote them."""

    pid: int
    start: str | None
    updated: float
    alerts: tuple[dict[str, Any], ...]  # title, text, kind, severity, key, since

    @property
    def lines(self) -> list[str]:
        return [f"{a.get('title', '?')}: {a.get('text', '')}" for a in self.alerts]


def write_firing(firing: dict[str, Alert], since: dict[str, float]) -> None:
    paths.ensure_private_dir(paths.state_dir())
    alerts = [
        {"key": key, "kind": a.kind, "severity": a.severity, "title": a.title, "text": a.text, "since": since.get(key)}
        for key, a in sorted(firing.items())
    ]
    data = {"pid": os.getpid(), "start": start_id(os.getpid()), "updated": time.time(), "alerts": alerts}
    write_text_atomic(paths.alerts_file(), jsonio.dumps(data, indent=1) + "\n", mode=0o600)


def clear_firing() -> None:
    """The watcher stops: what it said fires is no longer watched."""
    try:
        data = jsonio.read_object(paths.alerts_file())
    except jsonio.DamagedFile:
        data = None
    if data is None or data.get("pid") == os.getpid():
        try:
            paths.alerts_file().unlink()
        except FileNotFoundError:
            pass


def read_firing() -> Firing | None:
    """What fires now, or None when no watcher runs (no file, a damaged one, its writer gone)."""
    try:
        data = jsonio.read_object(paths.alerts_file())
    except jsonio.DamagedFile:
        return None
    if data is None:
        return None
    pid, start, alerts = data.get("pid"), data.get("start"), data.get("alerts")
    if (
        not isinstance(pid, int)
        or not isinstance(alerts, list)
        or not same_process(pid, start=start if isinstance(start, str) else None)
    ):
        return None
    updated = data.get("updated")
    return Firing(
        pid,
        start if isinstance(start, str) else None,
        float(updated) if isinstance(updated, (int, float)) else 0.0,
        tuple(a for a in alerts if isinstance(a, dict)),
    )
