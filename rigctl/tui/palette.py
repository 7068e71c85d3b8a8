"""rigctl's own actions in the command palette (ctrl+p), beside Textual's: switch to each profile,
restart, stop, run each bench plan, open each screen. Each goes through the same path as its key (a switch asks first,
showing what it costs), so the palette is a way to find an action, never a way around its checks."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from textual.app import SystemCommand

from rigctl.profiles.store import ProfileStore

SCREEN_HELP = {
    "dashboard": "the GPUs, the engine, the interconnect",
    "profiles": "the profiles, each resolved and checked",
    "logs": "the vLLM server log",
    "history": "boots recorded, and what each profile did while it served",
    "bench": "bench runs and their verdicts",
    "processes": "the processes on each GPU",
    "trends": "the serving record drawn over time",
}


def rig_commands(
    store: ProfileStore | None,
    go: Callable[[str], None],
    switch: Callable[[str], None],
    restart: Callable[[], None],
    stop: Callable[[], None],
    bench: Callable[[str], None],
) -> Iterable[SystemCommand]:
    for name, said in SCREEN_HELP.items():
        yield SystemCommand(f"Open {name}", said, partial(go, name))
    if store is None:
        return  # no launcher (a rig view only): nothing to serve
    yield SystemCommand("Restart the served profile", "a switch to itself, asked first", restart)
    yield SystemCommand("Stop the vLLM server", "asked first; what runs is let finish", stop)
    for name in store.names():
        yield SystemCommand(f"Switch to {name}", "asked first, with what the switch costs", partial(switch, name))
    from rigctl.bench.plan_file import plan_names  # read when the palette opens, not at the TUI's start

    for plan in plan_names():
        yield SystemCommand(f"Run bench {plan}", "asked first; rigctl bench beside the TUI, B follows it", partial(bench, plan))
