"""RigApp: screens, key bindings and the pollers; the logic lives in the core."""

from __future__ import annotations

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker

from rigctl.config import Settings, load_settings
from rigctl.engine.poller import EnginePoller
from rigctl.gpu.sampler import RigSampler
from rigctl.profiles.schema import ProfileError
from rigctl.serve import switch as transaction
from rigctl.serve.bootwatch import Event
from rigctl.serve.control import ServeContext
from rigctl.serve.lock import RigBusyError
from rigctl.serve.status import observe
from rigctl.tui.messages import EngineSampled, PollFailed, RigSampled, SwitchFinished, SwitchProgress
from rigctl.tui.screens.boot import BootScreen
from rigctl.tui.screens.confirm import ConfirmScreen
from rigctl.tui.screens.dashboard import DashboardScreen
from rigctl.tui.screens.logs import LogScreen
from rigctl.tui.screens.profiles import ProfilesScreen


class RigApp(App[None]):
    CSS_PATH = "rigctl.tcss"
    TITLE = "rigctl"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("d", "show_dashboard", "Dashboard"),
        Binding("p", "show_profiles", "Profiles"),
        Binding("l", "show_logs", "Logs"),
        Binding("r", "refresh", "Refresh"),
    ]

    def __init__(self, sampler: RigSampler, serve: ServeContext | None = None, settings: Settings | None = None,
                 poll_interval: float | None = 1.0, initial_switch: str | None = None) -> None:
        super().__init__()
        self.sampler = sampler
        self.serve = serve
        self.settings = settings or (serve.settings if serve else load_settings())
        self.poll_interval = poll_interval
        self.initial_switch = initial_switch
        self._rig_worker: Worker[None] | None = None
        self._engine_worker: Worker[None] | None = None
        self.engine_poller = EnginePoller()
        self._last_rig = None
        self._switch_worker: Worker[None] | None = None
        self._rig_failing = False
        self.dashboard = DashboardScreen(sampler.info)
        self.profiles = ProfilesScreen(sampler.info)
        self.logs = LogScreen(self.settings)
        self.boot: BootScreen | None = None
        if serve is not None:
            serve.on_event = lambda event: self.post_message(SwitchProgress(event))

    def on_mount(self) -> None:
        for name, screen in (("dashboard", self.dashboard), ("profiles", self.profiles), ("logs", self.logs)):
            self.install_screen(screen, name)
        self.push_screen("dashboard")
        self.poll_now()
        if self.poll_interval:
            self.set_interval(self.poll_interval, self.poll_rig, name="poll-rig")
            self.set_interval(max(self.poll_interval, self.settings.metrics_interval), self.poll_engine,
                              name="poll-engine")
        if self.initial_switch:
            self.start_switch(self.initial_switch)

    # -- polling ---------------------------------------------------------------------

    def poll_now(self) -> None:
        self.poll_rig()
        self.poll_engine()

    def poll_rig(self) -> None:
        """Start a rig sample unless the last one still runs (single-flight)."""
        if self._rig_worker is None or self._rig_worker.is_finished:
            self._rig_worker = self._poll_rig()

    def poll_engine(self) -> None:
        if self._engine_worker is None or self._engine_worker.is_finished:
            self._engine_worker = self._poll_engine()

    @work(thread=True, group="poll-rig", exit_on_error=False, description="Sampling the GPUs")
    def _poll_rig(self) -> None:
        try:
            snapshot = self.sampler.snapshot()
        except Exception as exc:  # a poll never takes the app down; it marks the view stale
            self.post_message(PollFailed("rig", f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(RigSampled(snapshot))

    @work(thread=True, group="poll-engine", exit_on_error=False, description="Reading vLLM's /metrics")
    def _poll_engine(self) -> None:
        try:
            state = self.engine_poller.poll(self._last_rig.samples if self._last_rig else ())
            serving = observe(self.settings, probe=state.probe)
        except Exception as exc:  # never fatal: the panel says what went wrong
            self.post_message(PollFailed("engine", f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(EngineSampled(state, serving))

    def on_rig_sampled(self, message: RigSampled) -> None:
        self._last_rig = message.snapshot
        if self._rig_failing:
            self._rig_failing = False
            self.dashboard.mark_stale(False)
        self.dashboard.show(message.snapshot)

    def on_engine_sampled(self, message: EngineSampled) -> None:
        self.dashboard.show_engine(message.state, message.serving)

    def on_poll_failed(self, message: PollFailed) -> None:
        if message.source != "rig":
            self.notify(f"{message.source} poll failed: {message.error}", severity="warning")
            return
        if not self._rig_failing:  # notify once per outage, keep the last values marked stale
            self._rig_failing = True
            self.dashboard.mark_stale(True)
            self.notify(f"GPU sampling failed: {message.error}", severity="error")

    # -- switching -------------------------------------------------------------------

    def request_switch(self, name: str, detail: str = "") -> None:
        if self.serve is None:
            self.notify("switching needs a launcher: run rigctl on the rig, or with --sim", severity="warning")
            return
        if self._switch_worker is not None and not self._switch_worker.is_finished:
            self.notify("a switch is already running", severity="warning")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.start_switch(name)

        self.push_screen(ConfirmScreen(f"Switch to {name}? The running server stops first.", detail), answered)

    def start_switch(self, name: str) -> None:
        self.boot = BootScreen(name)
        self.push_screen(self.boot)
        self._switch_worker = self._run_switch(name)

    @work(thread=True, group="switch", exit_on_error=False, description="Switching profile")
    def _run_switch(self, name: str) -> None:
        assert self.serve is not None
        try:
            outcome = transaction.switch(self.serve, name)
        except (ProfileError, RigBusyError) as exc:
            self.post_message(SwitchFinished(name, None, str(exc)))
            return
        except Exception as exc:  # shown, never fatal to the app
            self.post_message(SwitchFinished(name, None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(SwitchFinished(name, outcome))

    def on_switch_progress(self, message: SwitchProgress) -> None:
        event: Event = message.event  # type: ignore[assignment]
        if self.boot is not None:
            self.boot.add_event(event.kind, event.text, event.profile, event.seconds)

    def on_switch_finished(self, message: SwitchFinished) -> None:
        outcome = message.outcome
        ok = outcome is not None and getattr(outcome, "status", "") == "switched"
        text = message.error or getattr(outcome, "message", "")
        if self.boot is not None:
            self.boot.finish(text, ok)
        self.notify(text, title="switch", severity="information" if ok else "error", timeout=10)
        self.profiles.action_reload()
        self.poll_now()

    # -- navigation ------------------------------------------------------------------

    def action_refresh(self) -> None:
        self.poll_now()

    def action_show_dashboard(self) -> None:
        self.switch_screen("dashboard")

    def action_show_profiles(self) -> None:
        self.switch_screen("profiles")

    def action_show_logs(self) -> None:
        self.switch_screen("logs")


def make_app(sampler: RigSampler, serve: ServeContext | None = None, poll_interval: float | None = 1.0,
             initial_switch: str | None = None, settings: Settings | None = None) -> RigApp:
    return RigApp(sampler, serve, settings=settings, poll_interval=poll_interval, initial_switch=initial_switch)
