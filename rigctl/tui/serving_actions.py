"""The app's serving actions: switch, restart and stop, each asked first (a switch with what it
costs), run in a worker off the UI thread, followed on the boot panel and ended with a
notification. RigApp is this app with its screens, keys and navigation."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import work
from textual.worker import Worker

from rigctl.errors import RigctlError
from rigctl.jsonio import DamagedFile
from rigctl.tui.messages import SwitchFinished, SwitchProgress, SwitchRequested
from rigctl.tui.polling import PollingApp

# What serves and what asks is imported when an action is asked for, not at the TUI's start
# (its first frame waits for the dashboard alone: docs/guide/costs.md).
if TYPE_CHECKING:
    from rigctl.serve.context import ServeContext
    from rigctl.serve.cost import SwitchCost
    from rigctl.serve.switch import SwitchOutcome
    from rigctl.tui.screens.boot import BootScreen


class ServingApp(PollingApp):
    # set by RigApp's __init__
    serve: ServeContext | None
    boot: BootScreen | None
    _serve_worker: Worker[None] | None

    @property
    def serving_action_running(self) -> bool:
        return self._serve_worker is not None and not self._serve_worker.is_finished

    def _can_serve(self) -> bool:
        if self.serve is None:
            self.notify("switching needs a launcher: run rigctl on the rig, or with --sim", severity="warning")
            return False
        if self.serving_action_running:
            self.notify("a switch, restart or stop is already running", severity="warning")
            return False
        from rigctl.serve.lock import rig_held_by

        holder = rig_held_by()
        if holder is not None:  # a bench (or a switch from another terminal): asking would only be refused after
            self.notify(f"the rig is busy: {holder} holds it; try again when it ends", severity="warning", timeout=10)
            return False
        return True

    def _confirm(self, question: str, detail: str, then: Callable[[], object]) -> None:
        from rigctl.tui.screens.confirm import ConfirmScreen

        def answered(answer: str | None) -> None:
            if answer:
                then()

        self.push_screen(ConfirmScreen(question, detail), answered)

    def request_switch(self, name: str, detail: str = "") -> None:
        """Ask first, showing what the switch costs (the pool change, warnings, running requests),
        computed off the UI thread; `detail` stands in when the cost cannot be had."""
        if self._can_serve():
            self._cost_of_switch(name, detail)

    def on_switch_requested(self, message: SwitchRequested) -> None:
        self.request_switch(message.profile, message.detail)

    @work(thread=True, group="cost", exclusive=True, exit_on_error=False, description="What a switch costs")
    def _cost_of_switch(self, name: str, detail: str) -> None:
        from rigctl.serve.cost import switch_cost

        assert self.serve is not None
        try:
            cost: SwitchCost | None = switch_cost(self.serve, name)
        except RigctlError as exc:
            self.call_from_thread(self.notify, f"{name}: {exc}", severity="error")
            return
        except Exception:  # noqa: BLE001 - the question is still asked, with the diff alone
            cost = None
        self.call_from_thread(self._ask_switch, name, cost, detail)

    def _ask_switch(self, name: str, cost: SwitchCost | None, detail: str) -> None:
        from rigctl.serve import switch as transaction
        from rigctl.tui.screens.confirm import CUT, ConfirmScreen

        running = bool(cost and cost.running_requests)

        def answered(answer: str | None) -> None:
            if answer:
                drain = 0.0 if answer == CUT else None
                self.start_serving_action(name, lambda ctx: transaction.switch(ctx, name, drain=drain))

        if cost is not None and cost.refusal:
            self.notify(f"{name} would be refused before anything stops: {cost.refusal}", severity="error", timeout=15)
            return
        text = "\n".join(cost.lines()) if cost is not None else detail
        self.push_screen(ConfirmScreen(f"Switch to {name}? The running server stops first.", text, cut=running), answered)

    def _served_profile(self, verb: str) -> str | None:
        """The profile of the server rigctl started, if there is one to `verb` now."""
        from rigctl.state.statefiles import read_record

        try:
            record = read_record()
        except DamagedFile as exc:
            self.notify(f"nothing to {verb}: {exc}", severity="warning")
            return None
        if record is None:
            self.notify(f"nothing to {verb}: no server started by rigctl (p, then s, starts one)", severity="warning")
            return None
        return record.profile if self._can_serve() else None

    def action_restart(self) -> None:
        from rigctl.serve import switch as transaction

        if name := self._served_profile("restart"):
            self._confirm(
                f"Restart {name}?",
                "vLLM stops, then boots the same profile (no rollback target: it is the same profile).",
                lambda: self.start_serving_action(name, lambda ctx: transaction.switch(ctx, name, rollback=False)),
            )

    def action_stop(self) -> None:
        if name := self._served_profile("stop"):
            self._confirm(
                f"Stop {name}?", "Nothing will serve until you start or switch a profile.", lambda: self._start_stop(name)
            )

    def start_serving_action(self, name: str, action: Callable[[ServeContext], SwitchOutcome]) -> None:
        # Installed, so leaving it (d, p, ...) keeps it alive and b brings it back mid-boot.
        from rigctl.state.boots import expected_boot, read_all
        from rigctl.tui.screens.boot import BootScreen

        while len(self.screen_stack) > 2:
            self.pop_screen()
        if self.boot is not None and self.is_screen_installed("boot"):
            self.uninstall_screen("boot")
            self.boot.remove()
        self.boot = BootScreen(name, expected_boot(read_all(), name))
        self.install_screen(self.boot, "boot")
        self.push_screen("boot")
        self._serve_worker = self._run_serving(name, action)

    def _start_stop(self, name: str) -> None:
        from rigctl.serve import switch as transaction

        self.notify(f"stopping {name}...", timeout=3)
        self._serve_worker = self._run_serving(name, transaction.stop)

    @work(thread=True, group="serve", exit_on_error=False, description="Switching, restarting or stopping")
    def _run_serving(self, name: str, action: Callable[[ServeContext], SwitchOutcome]) -> None:
        from rigctl.bench.live import read_live, settle

        assert self.serve is not None
        cut = read_live()
        try:
            outcome = action(self.serve)
            if cut is not None and cut.cut_short and outcome.status != "refused":
                settle(cut, f"the TUI: {outcome.message}")  # the owner chose what serves now
        except RigctlError as exc:  # profile errors, a busy rig: shown, nothing touched
            self.post_message(SwitchFinished(name, None, str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - shown, never fatal to the app
            self.post_message(SwitchFinished(name, None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(SwitchFinished(name, outcome))

    def on_switch_progress(self, message: SwitchProgress) -> None:
        if not self.is_running:  # the switch's thread goes on as the app quits (asked twice): nothing left to show it on
            return
        event = message.event
        if self.boot is not None and not self.boot.done:
            self.boot.add_event(event.kind, event.text, event.profile, event.seconds)

    def on_switch_finished(self, message: SwitchFinished) -> None:
        if not self.is_running:
            return
        outcome = message.outcome
        status = outcome.status if outcome is not None else ""
        ok = outcome is not None and status in ("switched", "stopped")
        text = message.error or (outcome.message if outcome else "")
        title = {"switched": "switch", "stopped": "stop", "rolled_back": "rolled back"}.get(status, "failed")
        if self.boot is not None and not self.boot.done:
            self.boot.finish(text, ok)
        self.notify(text, title=title, severity="information" if ok else "error", timeout=15)
        from rigctl.tui.screens.profiles import ProfilesScreen

        profiles = self.made_screen("profiles")
        if isinstance(profiles, ProfilesScreen):  # one never shown reads the profiles when it is
            profiles.action_reload()
        self.poll_now()
