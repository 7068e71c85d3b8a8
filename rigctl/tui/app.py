"""RigApp: screens, the key map and the pollers; the logic lives in the core."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker

from rigctl.config import Settings, load_settings
from rigctl.errors import RigctlError
from rigctl.serve.context import Event, ServeContext, to_both
from rigctl.tui.messages import ServingContextMade, SwitchProgress
from rigctl.tui.screens.dashboard import DashboardScreen
from rigctl.tui.serving_actions import ServingApp
from rigctl.tui.theme import ThemeKeeper

if TYPE_CHECKING:
    from rigctl.gpu.sampler import RigSampler
    from rigctl.tui.screens.processes import ProcessesScreen
    from rigctl.tui.screens.profiles import ProfilesScreen
    from rigctl.tui.screens.trends import TrendsScreen

# The main screens. Each but the dashboard is imported and built the first time it is shown: the
# first frame waits for the dashboard alone (docs/guide/costs.md).
SCREENS = ("dashboard", "profiles", "logs", "history", "bench", "processes", "trends", "rigs")


def help_scopes() -> dict[str, type[Screen[Any]]]:
    """Every screen's class by the name the help gives it (imported now: the help lists their keys)."""
    from rigctl.tui.screens.bench import BenchScreen
    from rigctl.tui.screens.boot import BootScreen
    from rigctl.tui.screens.confirm import ConfirmScreen
    from rigctl.tui.screens.history import HistoryScreen
    from rigctl.tui.screens.logs import LogScreen
    from rigctl.tui.screens.processes import ProcessesScreen
    from rigctl.tui.screens.profiles import ProfilesScreen
    from rigctl.tui.screens.rigs import RigsScreen
    from rigctl.tui.screens.trends import TrendsScreen

    return {
        "dashboard": DashboardScreen,
        "profiles": ProfilesScreen,
        "logs": LogScreen,
        "history": HistoryScreen,
        "bench": BenchScreen,
        "processes": ProcessesScreen,
        "trends": TrendsScreen,
        "rigs": RigsScreen,
        "boot panel": BootScreen,
        "confirm": ConfirmScreen,
    }


class RigApp(ServingApp):
    CSS_PATH = "rigctl.tcss"
    TITLE = "rigctl"
    # One key map for every screen; screens add only their own verbs (s on profiles, c on logs).
    BINDINGS = [
        Binding("question_mark", "help", "Help", tooltip="this help: every key, and what n/a means"),
        # right after help: the footer cuts from the right at 80 columns, and q must never be cut
        Binding("q", "quit", "Quit", tooltip="quit rigctl (vLLM keeps serving)"),
        Binding("d", "show_dashboard", "Dash", tooltip="the dashboard: GPUs, engine, interconnect, log tail"),
        Binding("p", "show_profiles", "Profiles", tooltip="the profiles, each resolved and checked"),
        Binding("l", "show_logs", "Logs", tooltip="the vLLM server log, followed"),
        Binding("h", "show_history", "History", tooltip="boots recorded: KV pool, load time, per profile"),
        Binding("B", "show_bench", "Bench", tooltip="bench runs: the one running now, the kept ones, their verdicts"),
        Binding("g", "show_trends", "Trends", tooltip="the serving record drawn: KV, hit rate, TTFT, tok/s, power, J/token"),
        Binding("w", "show_rigs", "Rigs", show=False, tooltip="every rig: Prometheus's figures, and s to switch one over SSH"),
        Binding("P", "show_processes", "Procs", show=False, tooltip="the processes on each GPU: pid, user, vLLM role, memory"),
        Binding(
            "s",
            "pick_profile",
            "Switch",
            show=False,
            tooltip="switch profile: opens the profiles; there s switches to the selected one",
        ),
        Binding("b", "show_boot", "Boot panel", show=False, tooltip="back to the last switch's boot panel"),
        Binding("R", "restart", "Restart", show=False, tooltip="restart the served profile (asks first)"),
        Binding("x", "stop", "Stop", show=False, tooltip="stop the vLLM server (asks first)"),
        Binding("r", "refresh", "Refresh", show=False, tooltip="sample the GPUs and /metrics now"),
        Binding("t", "change_theme", "Theme", show=False, tooltip="pick a theme; it is saved to config.toml"),
    ]

    def __init__(
        self,
        sampler: RigSampler,
        serve: ServeContext | Callable[[], ServeContext] | None = None,
        settings: Settings | None = None,
        poll_interval: float | None = 1.0,
        initial_switch: str | None = None,
        record: bool = False,
    ) -> None:
        """`serve`: the serving context, or what makes it after the first frame (the CLI's)."""
        super().__init__()
        self.sampler = sampler
        self.serve: ServeContext | None = None
        self._make_serve: Callable[[], ServeContext] | None = None
        self.is_live = False  # the serving context made and the first poll asked for (tests wait on it)
        if isinstance(serve, ServeContext):
            self.serve = self._with_events(serve)
        elif serve is not None:
            self._make_serve = serve
        self.settings = settings or (serve.settings if isinstance(serve, ServeContext) else load_settings())
        self.themes = ThemeKeeper(self, self.settings)
        self.poll_interval = poll_interval
        self.initial_switch = initial_switch
        self._poll_loop_worker: Worker[None] | None = None
        self._tick_worker: Worker[None] | None = None
        self._tick_lock = threading.Lock()  # poll_now and the one-tick worker: ask again vs end
        self._tick_running = False
        self._tick_again = False
        self._wake = threading.Event()
        self._unmounted = threading.Event()
        self._serve_worker: Worker[None] | None = None
        self._quit_asked = 0.0
        self._record = record
        self._live = None
        self._live_lock = threading.Lock()
        self._rig_failing = False
        self.dashboard = DashboardScreen(sampler.info, self.settings)
        self.boot = None

    def _with_events(self, serve: ServeContext) -> ServeContext:
        """The app's own view of the caller's context: its events reach the caller's listener and the
        app's screens both, and the caller's context is left as it was given."""
        return dataclasses.replace(serve, on_event=to_both(serve.on_event, self._switch_event))

    def _switch_event(self, event: Event) -> None:
        self.post_message(SwitchProgress(event))  # from the switch's thread: Textual's messages are thread-safe

    def on_mount(self) -> None:
        self.themes.apply()
        self.install_screen(self.dashboard, "dashboard")
        self.push_screen("dashboard")
        # The first frame waits for the dashboard alone; what observes and serves is made after it
        # (docs/guide/costs.md).
        self.call_after_refresh(self._go_live)

    def _go_live(self) -> None:
        """The serving context (made in a thread: its imports take seconds on a loaded machine, and
        `q` must quit meanwhile), then the live pipeline and its poll, the record, the switch asked
        for on the command line."""
        if self._make_serve is None:
            self._live_ready(None, None)
        else:
            make, self._make_serve = self._make_serve, None
            # a daemon thread, not a Textual worker: a worker runs in asyncio's default executor,
            # which the app's exit joins, so `q` would leave the terminal hanging until it returned
            threading.Thread(target=self._make_serving_context, args=(make,), name="rigctl-go-live", daemon=True).start()

    def _make_serving_context(self, make: Callable[[], ServeContext]) -> None:
        import rigctl.bench.live
        import rigctl.state.serving  # noqa: F401 - imported here, off the event loop, for _live_ready

        try:
            made, problem = make(), None
        except RigctlError as exc:  # the rig is still watched; switching says it needs a launcher
            made, problem = None, f"{exc}: switching is off in this session"
        except Exception as exc:  # noqa: BLE001 - a fault of rigctl's own: said as the workers' are, never silent
            made, problem = None, f"the serving context could not be made: {type(exc).__name__}: {exc}"
        # thread-safe, and dropped when the app has quit meanwhile: nothing goes live then
        self.post_message(ServingContextMade(made, problem))

    def on_serving_context_made(self, message: ServingContextMade) -> None:
        self._live_ready(message.made, message.problem)

    def _live_ready(self, made: ServeContext | None, problem: str | None) -> None:
        from rigctl.bench.live import read_live
        from rigctl.state.serving import observe

        if self._unmounted.is_set():  # the context was made as the app quit: nothing goes live
            return

        if made is not None:
            self.serve = self._with_events(made)
        if problem:
            self.notify(problem, severity="error", timeout=30)
        if self.poll_interval:
            self._poll_loop_worker = self._poll_loop(self.poll_interval, max(self.poll_interval, self.settings.metrics_interval))
        else:
            self.poll_now()
        problem = self.pipeline.start_record()  # (the watch service keeping it is fine: it records for us)
        if problem:
            self.notify(problem, severity="warning", timeout=15)
        cut = read_live()
        if cut is not None and cut.cut_short:
            self.notify(cut.note(observe(self.settings).active_profile), title="bench cut short", severity="warning", timeout=30)
        self.is_live = True
        if self.initial_switch:
            from rigctl.serve import switch as transaction

            self.start_serving_action(self.initial_switch, lambda ctx: transaction.switch(ctx, self.initial_switch or ""))

    def on_unmount(self) -> None:
        # the poll loop sees it now, not at its next tick; _unmounted too, as the loop clears _wake at
        # each tick's start (a loop that started as the app quit slept out its interval, and the
        # app's exit joined it: 60 s once, on a loaded machine)
        self._unmounted.set()
        self._wake.set()
        if self._live is not None:
            self._live[0].close()

    # -- navigation ------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Quit; during a switch only when asked twice: quitting then leaves the switch unfinished."""
        if self.serving_action_running and time.monotonic() - self._quit_asked > 5:
            self._quit_asked = time.monotonic()
            self.notify(
                "a switch is running: quitting now leaves it unfinished (rigctl status will say so). q again to quit anyway",
                severity="warning",
                timeout=5,
            )
            return
        self.exit()

    def action_help(self) -> None:
        from rigctl.tui.screens.help import HelpScreen, help_rows

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(help_rows(self, help_scopes())))

    def action_refresh(self) -> None:
        self.poll_now()

    def go(self, name: str) -> None:
        """Show one of the main screens; dialogs and the boot panel above it are closed first."""
        while len(self.screen_stack) > 2:
            self.pop_screen()
        if self.screen is not self.main_screen(name):
            self.switch_screen(name)

    def main_screen(self, name: str) -> Screen[Any]:
        """One of SCREENS, built and installed the first time it is asked for."""
        if not self.is_screen_installed(name):
            self.install_screen(self._build(name), name)
        return self.get_screen(name)

    def _build(self, name: str) -> Screen[Any]:
        if name == "profiles":
            from rigctl.profiles.vllm_version import OptionTables
            from rigctl.tui.screens.profiles import ProfilesScreen

            tables = self.serve.tables if self.serve else OptionTables(self.settings.vllm_command, cached_only=True)
            return ProfilesScreen(self.sampler.info, tables)
        if name == "logs":
            from rigctl.tui.screens.logs import LogScreen

            return LogScreen(self.settings)
        if name == "history":
            from rigctl.tui.screens.history import HistoryScreen

            return HistoryScreen(id=name)
        if name == "bench":
            from rigctl.tui.screens.bench import BenchScreen

            return BenchScreen(id=name)
        if name == "processes":
            from rigctl.tui.screens.processes import ProcessesScreen

            return ProcessesScreen(id=name)
        if name == "trends":
            from rigctl.tui.screens.trends import TrendsScreen

            return TrendsScreen(id=name)
        if name == "rigs":
            from rigctl.tui.screens.rigs import RigsScreen

            return RigsScreen(id=name)
        raise KeyError(name)

    @property
    def profiles(self) -> ProfilesScreen:
        return cast("ProfilesScreen", self.main_screen("profiles"))

    @property
    def processes(self) -> ProcessesScreen:
        return cast("ProcessesScreen", self.main_screen("processes"))

    @property
    def trends(self) -> TrendsScreen:
        return cast("TrendsScreen", self.main_screen("trends"))

    def action_show_dashboard(self) -> None:
        self.go("dashboard")

    def action_show_profiles(self) -> None:
        self.go("profiles")

    def action_pick_profile(self) -> None:
        self.go("profiles")
        self.notify("pick a profile, then s to switch to it", timeout=3)

    def action_show_logs(self) -> None:
        self.go("logs")

    def action_show_history(self) -> None:
        self.go("history")

    def action_show_bench(self) -> None:
        self.go("bench")

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        from rigctl.tui.palette import rig_commands

        yield from super().get_system_commands(screen)
        store = self.serve.store if self.serve else None
        yield from rig_commands(store, self.go, self.request_switch, self.action_restart, self.action_stop, self.request_bench)

    def request_bench(self, plan: str) -> None:
        """Ask first (a bench takes the server over), then run `rigctl bench PLAN` beside the TUI."""
        if self._can_serve():
            self._confirm(
                f"Run bench {plan}?",
                "It switches the server to the plan's control and candidate in turn, then puts the control back;"
                " it runs on if you quit the TUI. B follows it.",
                partial(self._run_bench, plan),
            )

    @work(thread=True, group="bench", exit_on_error=False, description="A bench started from the palette")
    def _run_bench(self, plan: str) -> None:
        self.call_from_thread(self.go, "bench")
        from rigctl.bench.launch import LaunchedBench

        ending = LaunchedBench(plan).wait()
        severity = "information" if ending.ok else "error"
        self.call_from_thread(self.notify, ending.message(), title="bench", severity=severity, timeout=30)

    def action_show_trends(self) -> None:
        self.go("trends")

    def action_show_rigs(self) -> None:
        self.go("rigs")

    def action_show_processes(self) -> None:
        self.go("processes")
        if self.dashboard.last_snapshot is not None:
            self.processes.show(self.dashboard.last_snapshot)

    def action_show_boot(self) -> None:
        if not self.is_screen_installed("boot"):
            self.notify("no switch yet in this session", timeout=3)
        elif self.screen is not self.boot:
            self.push_screen("boot")


def make_app(
    sampler: RigSampler,
    serve: ServeContext | Callable[[], ServeContext] | None = None,
    poll_interval: float | None = 1.0,
    initial_switch: str | None = None,
    settings: Settings | None = None,
    record: bool = False,
) -> RigApp:
    """`record`: keep the serving record while the app runs (the CLI's TUI does; tests opt in)."""
    return RigApp(sampler, serve, settings=settings, poll_interval=poll_interval, initial_switch=initial_switch, record=record)
