"""RigApp: screens, key bindings and the pollers; the logic lives in the core."""

from __future__ import annotations

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker

from rigctl.gpu.sampler import RigSampler
from rigctl.tui.messages import PollFailed, RigSampled
from rigctl.tui.screens.dashboard import DashboardScreen
from rigctl.tui.screens.profiles import ProfilesScreen


class RigApp(App[None]):
    CSS_PATH = "rigctl.tcss"
    TITLE = "rigctl"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("d", "show_dashboard", "Dashboard"),
        Binding("p", "show_profiles", "Profiles"),
        Binding("r", "refresh", "Refresh"),
    ]

    def __init__(self, sampler: RigSampler, poll_interval: float | None = 1.0) -> None:
        super().__init__()
        self.sampler = sampler
        self.poll_interval = poll_interval
        self._rig_worker: Worker[None] | None = None
        self._rig_failing = False
        self.dashboard = DashboardScreen(sampler.info)
        self.profiles = ProfilesScreen(sampler.info)

    def on_mount(self) -> None:
        self.install_screen(self.dashboard, "dashboard")
        self.install_screen(self.profiles, "profiles")
        self.push_screen("dashboard")
        self.poll_now()
        if self.poll_interval:
            self.set_interval(self.poll_interval, self.poll_now, name="poll-rig")

    def poll_now(self) -> None:
        """Start a rig sample unless one is still running (single-flight)."""
        if self._rig_worker is None or self._rig_worker.is_finished:
            self._rig_worker = self._poll_rig()

    @work(thread=True, group="poll-rig", exit_on_error=False, description="Sampling the GPUs")
    def _poll_rig(self) -> None:
        try:
            snapshot = self.sampler.snapshot()
        except Exception as exc:  # a poll never takes the app down; it marks the view stale
            self.post_message(PollFailed("rig", f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(RigSampled(snapshot))

    def on_rig_sampled(self, message: RigSampled) -> None:
        if self._rig_failing:
            self._rig_failing = False
            self.dashboard.mark_stale(False)
        self.dashboard.show(message.snapshot)

    def on_poll_failed(self, message: PollFailed) -> None:
        if not self._rig_failing:  # notify once per outage, keep the last values marked stale
            self._rig_failing = True
            self.dashboard.mark_stale(True)
            self.notify(f"GPU sampling failed: {message.error}", severity="error")

    def action_refresh(self) -> None:
        self.poll_now()

    def action_show_dashboard(self) -> None:
        self.switch_screen("dashboard")

    def action_show_profiles(self) -> None:
        self.switch_screen("profiles")


def make_app(sampler: RigSampler, poll_interval: float | None = 1.0) -> RigApp:
    return RigApp(sampler, poll_interval=poll_interval)
