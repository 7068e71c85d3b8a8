"""What serves, looked at rather than assumed: alive and answering its served name (for a note
before a switch, and for the last line of a switch or bench left at a second Ctrl-C)."""

from __future__ import annotations

from rigctl.engine.client import EngineClient
from rigctl.serve.context import ServeContext
from rigctl.state.serving import find_running
from rigctl.state.statefiles import ServerRecord


def _looked(ctx: ServeContext) -> tuple[ServerRecord | None, bool]:
    """The server rigctl started, if one runs, and whether it answers with its served name."""
    running = find_running(ctx.settings, ctx.launcher, thorough=False)
    record = running.record
    if record is None:
        return None, False
    with EngineClient(record.base_url, running.view.api_key(record) if running.view else None, timeout=0.5) as client:
        probe = client.probe()
    return record, any(probe.serves(n) for n in record.served_names)


def serving_name(ctx: ServeContext) -> str | None:
    """The profile that serves, looked at (alive and answering its served name), or None."""
    record, answering = _looked(ctx)
    return record.profile if record and answering else None


def left_behind(ctx: ServeContext, since: float | None = None) -> str:
    """What serves now, looked at rather than assumed: for a second Ctrl-C's last line. `since`:
    when the switch that was left began (a server older than that was being stopped by it, one
    started since is its new boot)."""
    record, answering = _looked(ctx)
    if record is None:
        return "nothing serves"
    if answering:
        return f"{record.profile} serves (pid {record.pid})"
    if since is not None and record.started < since:
        return (
            f"nothing serves: the server for {record.profile} (pid {record.pid}) was told to stop and is "
            f"shutting down; nothing else was started"
        )
    return (
        f"the server for {record.profile} (pid {record.pid}) is still starting, unsupervised; it is recorded, "
        f"so `rigctl status` shows when it answers and `rigctl stop` stops it"
    )
