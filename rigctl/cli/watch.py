"""rigctl watch (also `rigctl record`, its name before it judged alerts): the rig's long-running
service for boxes nobody watches: it keeps the serving record, judges the alerts, sends them to
`[alerts] command`, and with `[supervise] restart = true` restarts the last good profile after
its engine died. Run it as the systemd unit in docs/guide/record-and-watch.md."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from rigctl.cli import common
from rigctl.errors import BadInputError
from rigctl.signals import StopOnSignal

if TYPE_CHECKING:
    from rigctl.record.rows import Row
    from rigctl.watch.supervisor import RestartResult


def register(sub: common.Subparsers) -> None:
    for name in ("watch", "record"):
        p = common.add_command(sub, name)
        p.add_argument("--interval", type=float, metavar="S", help="seconds per row (default: [record] interval, 10)")
        p.add_argument("--retention-days", type=float, default=30.0, metavar="D", help="rows older are dropped (30)")
        p.add_argument("-v", "--verbose", action="store_true", help="print a line per row written")
        p.set_defaults(handler=run)


def say(text: str) -> None:
    print(f"rigctl watch: {text}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from rigctl.config import RULES, load_settings
    from rigctl.errors import NoDriverError
    from rigctl.rules import RuleError
    from rigctl.watch.service import WatchService

    settings = load_settings()  # [record] interval, by its rule (config.RULES)
    if args.interval is not None:
        try:
            RULES["record_interval"].parse(args.interval)  # the flag stands for the key: one rule
        except RuleError as exc:
            raise BadInputError(f"--interval: {exc} (as [record] interval)") from None
    args.interval = args.interval if args.interval is not None else settings.record_interval
    from rigctl.rules import Amount

    common.check_flags(args, {"retention_days": Amount("days", positive=True)})
    stop = StopOnSignal()  # a flag and a pipe: a handler that took a lock could deadlock the loop it stops
    try:
        sampler = common.open_sampler(args, with_host=False)
    except NoDriverError:
        sampler = None  # the engine's figures still; no energy, no GPU alerts

    def said(row: Row) -> None:
        if args.verbose:
            print(
                f"{row.profile}: {row.requests:.0f} requests, {row.counts.get('prefix_queries', 0):,.0f} prefix "
                f"tokens queried in {row.seconds:.1f} s",
                flush=True,
            )

    restart = _restarter(args) if settings.supervise_restart else None
    service = WatchService(settings, sampler, say, args.interval, args.retention_days, restart, said)
    announce = (
        f"watching every {args.interval / 5:g} s, a row every {args.interval:g} s"
        + ("" if sampler else " (no GPU: no energy, no GPU alerts)")
        + (f"; restarts the last good profile after its engine dies ({settings.supervise_max_restarts} an hour)" if restart else "")
        + ("; starts it when it finds the rig down" if restart and service.bring_up else "")
        + (f"; alerts go to {settings.alerts_command[0]}" if settings.alerts_command else "")
    )
    try:
        rows = service.run(stop, announce)
    finally:
        stop.close()
        if sampler:
            sampler.close()
    say(f"stopped: {rows} rows written")
    return 0


def _restarter(args: argparse.Namespace) -> Callable[[], RestartResult]:
    """The supervisor's restart: `rigctl start` of the last good profile, as the command would."""
    from rigctl.cli.context import make_context
    from rigctl.serve import switch as transaction
    from rigctl.watch.supervisor import RestartResult

    def restart() -> RestartResult:
        ctx = make_context(args, lambda event: say(f"restart: {event.text}") if event.kind in ("warning", "failure") else None)
        try:
            outcome = transaction.start(ctx, None)
        finally:
            if ctx.sampler:
                ctx.sampler.close()
        # a start refused because a server runs already has nothing to try again; any other failure
        # (a boot that crashed, VRAM still held by a dying process) is tried again after a backoff
        settled = outcome.status == "refused" and "already running" in outcome.message
        return RestartResult(outcome.status == "switched", outcome.target, outcome.message, retry=not settled)

    return restart
