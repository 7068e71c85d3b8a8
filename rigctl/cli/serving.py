"""`rigctl switch|start|stop|restart`: the switch transaction from the command line.

Exit codes: 0 switched; 2 invalid profile (nothing touched); 3 failed and rolled back
(the previous profile serves); 4 failed and nothing serves (the rollback failed too).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from rigctl.bench.live import read_live, settle
from rigctl.cli import common
from rigctl.cli.context import make_context
from rigctl.errors import BadInputError, ExitCode, RigctlError
from rigctl.serve import switch as transaction
from rigctl.serve.bootwatch import BootResult
from rigctl.serve.context import Event, ServeContext
from rigctl.serve.looked import serving_name
from rigctl.signals import two_stage_interrupt
from rigctl.state.serving import find_running


class Progress:
    """Progress lines on a terminal: steps, phases with their seconds, warnings, the outcome."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose
        self.start = time.monotonic()
        self.reader_gone = False

    def __call__(self, event: Event) -> None:
        if event.kind == "outcome" or (event.kind == "line" and not self.verbose) or self.reader_gone:
            return
        try:
            self._print(event)
        except OSError:  # the reader left (`| head`, an SSH link cut by `--rig`'s Ctrl-C): the switch goes on, unwatched
            self.reader_gone = True

    def _print(self, event: Event) -> None:
        stamp = f"[{time.monotonic() - self.start:6.1f}s]"
        prefix = {"warning": "warning: ", "failure": "FAILED: "}.get(event.kind, "")
        if event.kind == "phase":
            print(f"{stamp}   {event.profile}: {event.text}", flush=True)
        elif event.kind in ("line", "command"):
            if self.verbose or event.kind == "command":
                print(f"{stamp}     {'$' if event.kind == 'command' else '|'} {event.text}", flush=True)
        else:
            print(f"{stamp} {prefix}{event.text}", flush=True)


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "switch")
    p.add_argument("name")
    _shared(p)
    p.add_argument("--no-rollback", action="store_true", help="leave the box down if the new profile fails")
    p.add_argument(
        "--force",
        action="store_true",
        help="try even when the GPUs' free memory says vLLM will refuse to start, or [verify] says the "
        "target lacks what the apps need (the verification then decides)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="change nothing: print the diff, the KV pool it would get against the one serving, the "
        "requests running, every warning and the verification that would run",
    )
    p.set_defaults(handler=run_switch)
    p = common.add_command(sub, "start")
    p.add_argument("name", nargs="?")
    _shared(p)
    p.set_defaults(handler=run_start)
    p = common.add_command(sub, "restart")
    _shared(p)
    p.set_defaults(handler=run_restart)
    p = common.add_command(sub, "stop")
    _drain_flags(p)
    common.add_json_flag(p)
    p.set_defaults(handler=run_stop)


def _drain_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--drain",
        type=float,
        metavar="S",
        help="wait up to S seconds for running requests to finish before the stop (default: [server] drain_timeout, 120)",
    )
    group.add_argument(
        "--no-drain", dest="drain", action="store_const", const=0.0, help="stop at once, cutting the requests that run"
    )


def _shared(p: argparse.ArgumentParser) -> None:
    _drain_flags(p)
    p.add_argument(
        "--no-verify",
        dest="verify",
        action="store_false",
        help="done when vLLM answers: skip [verify]'s checks (the boot record says so)",
    )
    p.add_argument(
        "--apps-may-change",
        dest="apps_judge",
        action="store_false",
        help="the change is meant to refuse what the apps sent before (a key rotation, a new served name): their first "
        "answers through the front door do not judge the switch",
    )
    p.add_argument("--timeout", type=float, metavar="S", help="seconds to wait for readiness (default: profile/config)")
    p.add_argument("--wait", type=float, metavar="S", help="wait up to S seconds for another switch to finish")
    p.add_argument("-v", "--verbose", action="store_true", help="also print the vLLM log as it boots")
    common.add_json_flag(p)


def _report(args: argparse.Namespace, outcome: transaction.SwitchOutcome) -> int:
    if args.json:

        def boot(result: BootResult | None) -> dict[str, object] | None:
            if result is None:
                return None
            return {
                "profile": result.profile,
                "ok": result.ok,
                "seconds": round(result.seconds, 2),
                "kv_tokens": result.report.pool_tokens,
                "max_concurrency": result.report.max_concurrency,
                "failure": None if result.failure is None else result.failure.__dict__,
            }

        common.print_json(
            {
                "status": outcome.status,
                "target": outcome.target,
                "exit_code": int(outcome.exit_code),
                "message": outcome.message,
                "attempt": boot(outcome.attempt),
                "rollback_profile": outcome.rollback_profile,
                "rollback": boot(outcome.rollback),
            }
        )
    else:
        print(outcome.message, file=sys.stdout if outcome.exit_code == 0 else sys.stderr)
    return int(outcome.exit_code)


def _run(args: argparse.Namespace, action: Callable[[ServeContext], transaction.SwitchOutcome]) -> int:
    ctx = make_context(args, None if args.json else Progress(args.verbose))

    def on_ctrl_c() -> bool:
        if ctx.interrupt.press():
            return False  # nothing stopped or started yet: leave at once
        print("Ctrl-C: stopping the new boot and rolling back (Ctrl-C again to leave at once)", file=sys.stderr, flush=True)
        return True

    cut = read_live()
    if cut is not None and cut.cut_short:
        print(f"note: {cut.note(serving_name(ctx))}", file=sys.stderr, flush=True)
    try:
        with two_stage_interrupt(on_ctrl_c):
            outcome = action(ctx)
            if cut is not None and cut.cut_short and outcome.status != "refused":
                settle(cut, f"rigctl {args.command} {outcome.target}".rstrip())  # the owner chose what serves now
        return _report(args, outcome)
    finally:
        if ctx.sampler:
            ctx.sampler.close()


def _options(args: argparse.Namespace, rollback: bool = True) -> transaction.SwitchOptions:
    if args.drain is not None and args.drain < 0:
        raise BadInputError("--drain must be a number of seconds, 0 or more")
    return transaction.SwitchOptions(
        timeout=args.timeout,
        rollback=rollback,
        lock_wait=args.wait,
        force=getattr(args, "force", False),
        drain=args.drain,
        verify=args.verify,
        apps_judge=getattr(args, "apps_judge", True),
    )


def run_switch(args: argparse.Namespace) -> int:
    options = _options(args, rollback=not args.no_rollback)
    if args.dry_run:
        return _dry_run(args, options)
    return _run(args, lambda ctx: transaction.switch_with(ctx, args.name, options))


def _dry_run(args: argparse.Namespace, options: transaction.SwitchOptions) -> int:
    """The cost, nothing touched: exit 0 when the switch would go ahead, 3 when it would be refused."""
    from rigctl.serve.cost import switch_cost

    ctx = make_context(args)
    try:
        cost = switch_cost(ctx, args.name, options)
    finally:
        if ctx.sampler:
            ctx.sampler.close()
    if args.json:
        common.print_json({**cost.to_json(), "dry_run": True})
    else:
        print(f"dry run: switch to {cost.target} (nothing was changed)")
        for line in cost.lines():
            print(f"  {line}")
    return int(ExitCode.ROLLED_BACK) if cost.refusal else 0


def run_start(args: argparse.Namespace) -> int:
    return _run(args, lambda ctx: transaction.start(ctx, args.name, timeout=args.timeout, drain=args.drain, verify=args.verify))


def run_restart(args: argparse.Namespace) -> int:
    def restart(ctx: ServeContext) -> transaction.SwitchOutcome:
        running = find_running(ctx.settings, ctx.launcher)
        if running.record is None:
            raise RigctlError("nothing to restart (no server started by rigctl is running); use start")
        return transaction.switch_with(ctx, running.record.profile, _options(args, rollback=False))

    return _run(args, restart)


def run_stop(args: argparse.Namespace) -> int:
    args.verbose = False
    if args.drain is not None and args.drain < 0:
        raise BadInputError("--drain must be a number of seconds, 0 or more")
    return _run(args, lambda ctx: transaction.stop(ctx, args.drain))
