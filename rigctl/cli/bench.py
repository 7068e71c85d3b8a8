"""`rigctl bench PLAN | check PLAN | report DIR | list`: the gated control-candidate-control benchmark.

Exit codes: 0 promote, 5 reject, 6 inconclusive, 2 bad plan (nothing switched), 1 failure
(a switch failed or the run was stopped: the control profile is put back).
"""

from __future__ import annotations

import argparse
import sys
import threading
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from rigctl import fmt
from rigctl.bench.checks import check_plan
from rigctl.bench.live import read_live, settle
from rigctl.bench.plan_file import load_plan
from rigctl.bench.rawdir import RawDir, bench_dir
from rigctl.bench.report import list_rows, reload, render
from rigctl.bench.run import run_bench
from rigctl.cli import common
from rigctl.cli.bench_console import Console
from rigctl.cli.context import make_context
from rigctl.errors import BadInputError
from rigctl.serve.looked import serving_name
from rigctl.signals import two_stage_interrupt

if TYPE_CHECKING:
    from rigctl.bench.eta import Estimate
    from rigctl.bench.plan import BenchPlan

ACTIONS = ("check", "report", "list", "calibrate")


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "bench")
    p.add_argument(
        "what",
        nargs="*",
        metavar="PLAN | check PLAN | report DIR | list | calibrate PLAN",
        help="a plan file or a plan name in ~/.config/rigctl/plans/; `check` validates it only, "
        "`report` shows a kept run again, `list` lists kept runs, `calibrate` measures the "
        "rig's boot-to-boot noise on the plan's control (A/A/A...)",
    )
    p.add_argument("--runs", type=int, default=5, metavar="N", help="calibrate: fresh servers to run (5; 3-12)")
    p.add_argument("--keep-candidate", action="store_true", help="leave the candidate serving when it is promoted")
    p.add_argument(
        "--restore",
        action="store_true",
        help="put back the control of a bench that was cut short (its rigctl killed, or left at a second Ctrl-C)",
    )
    p.add_argument(
        "--wait", type=float, default=0.0, metavar="S", help="wait up to S seconds for another switch or bench to finish"
    )
    p.add_argument("-v", "--verbose", action="store_true", help="also print each switch's boot phases")
    p.add_argument(
        "--progress", action="store_true", help="progress as JSON lines on stderr (one per phase, and each second while measuring)"
    )
    common.add_json_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    words = args.what
    if args.restore:
        if words:
            raise BadInputError("rigctl bench --restore takes no plan: it puts back the control of the bench cut short")
        return _restore(args)
    if not words:
        raise BadInputError("rigctl bench takes a plan (or: check PLAN, report DIR, list, --restore)")
    if words[0] in ACTIONS:
        action, rest = words[0], words[1:]
        if action == "list":
            return _list(args)
        if len(rest) != 1:
            raise BadInputError(f"rigctl bench {action} takes one {'run directory' if action == 'report' else 'plan'}")
        if action == "calibrate":
            return _calibrate(args, rest[0])
        return _check(args, rest[0]) if action == "check" else _report(args, rest[0])
    if len(words) != 1:
        raise BadInputError("rigctl bench takes one plan (or: check PLAN, report DIR, list)")
    return _bench(args, words[0])


def _restore(args: argparse.Namespace) -> int:
    """The control of a bench that was cut short, put back by a switch (its profile as it is now:
    the resolved launch of the bench that died is gone with it)."""
    from rigctl.serve import switch as transaction

    live = read_live()
    if live is None or not live.cut_short:
        message = (
            f"a bench is running (rigctl pid {live.pid}); it puts its control back itself"
            if live
            else "no bench was cut short: there is nothing to put back"
        )
        if args.json:
            common.print_json({"status": "nothing", "message": message, "exit_code": 0 if not live else 1})
        else:
            print(message)
        return 0 if not live else 1
    console = Console(args.verbose, args.progress)
    ctx = make_context(args, console.event)
    try:
        console.say(f"note: {live.note(serving_name(ctx))}")
        outcome = transaction.switch(ctx, live.control, lock_wait=args.wait)
        if outcome.status != "refused":
            settle(live, f"rigctl bench --restore: {outcome.message}")
    finally:
        if ctx.sampler:
            ctx.sampler.close()
    if args.json:
        common.print_json(
            {
                "status": outcome.status,
                "control": live.control,
                "message": outcome.message,
                "exit_code": int(outcome.exit_code),
                "raw_dir": live.raw_dir,
            }
        )
    else:
        print(outcome.message, file=sys.stdout if outcome.exit_code == 0 else sys.stderr)
    return int(outcome.exit_code)


def _bench(args: argparse.Namespace, name: str) -> int:
    plan = load_plan(name)  # PlanError: exit 2, nothing touched
    console = Console(args.verbose, args.progress)
    ctx = make_context(args, console.event)
    earlier = read_live()
    if earlier is not None and earlier.cut_short:
        console.say(f"note: {earlier.note(None)}; this bench puts its own control back")
    stop = threading.Event()

    def on_ctrl_c() -> bool:
        stop.set()
        if ctx.interrupt.touched:
            ctx.interrupt.press()  # a boot under way stops and the switch rolls back
        console.say("Ctrl-C: stopping the bench; the control profile will be put back (Ctrl-C again to leave at once)")
        return True

    try:
        checked = check_plan(ctx, plan)
        for warning in checked.warnings:
            console.say(f"note: {warning}")
        # SIGTERM (systemd, a kill) as the first Ctrl-C: the run stops and the control goes back;
        # the handler sets an Event nobody waits on (only is_set() is asked), so it takes no lock
        # another holder could hold
        with two_stage_interrupt(on_ctrl_c, sigterm=True):
            if earlier is not None and earlier.cut_short:
                settle(earlier, f"rigctl bench {plan.name} started after it")
            result = run_bench(
                ctx, checked, keep_candidate=args.keep_candidate, on_progress=console.progress, stop=stop, lock_wait=args.wait
            )
    finally:
        if ctx.sampler:
            ctx.sampler.close()
    data = result.to_json()
    if args.json:
        common.print_json(data)
    else:
        print(render(data))
    return int(result.exit_code())


def _check(args: argparse.Namespace, name: str) -> int:
    plan = load_plan(name)
    ctx = make_context(args)
    try:
        checked = check_plan(ctx, plan)
    finally:
        if ctx.sampler:
            ctx.sampler.close()
    if args.json:
        common.print_json(
            {
                "plan": plan.name,
                "plan_file": str(plan.path),
                "control": plan.control,
                "candidate": plan.candidate,
                "candidates": list(plan.candidates),
                "order": plan.order,
                "arms": plan.arms(),
                "workload": asdict(plan.workload),
                "gate": asdict(plan.gate),
                "requests": len(plan.requests) if plan.requests else plan.workload.requests,
                "changes": {
                    name: [{"what": c.what, "control": c.before, "candidate": c.after} for c in changed]
                    for name, changed in checked.changes.items()
                },
                "warnings": list(checked.warnings),
                "run_eta_s": round(_run_estimate(plan).seconds, 1),
                "run_eta_floor": _run_estimate(plan).floor,
            }
        )
        return 0
    w = plan.workload
    amount = (
        f"{len(plan.requests)} requests of {w.trace or w.dataset}"
        if plan.requests
        else f"{w.requests} requests"
        if w.requests
        else f"{w.duration_s:g} s"
    )
    print(f"{plan.path}: ok")
    print(f"  arms: {' -> '.join(p for _, p in plan.arms())}")
    took = _run_estimate(plan)
    print(
        f"  the run: about {took.describe(fmt.seconds)}"
        + (" (boots from each profile's last; the measuring is known after the first arm)" if took.floor else "")
    )
    print(
        f"  workload: {w.kind}, {amount} at {w.concurrency} concurrent, {w.arrival} arrival, "
        f"~{w.prompt_tokens} prompt tokens ({w.shared_prefix_tokens} shared), {w.max_tokens} out, "
        f"{w.warmup_requests} warm-up"
    )
    print(
        f"  gate: {plan.gate.metric} {plan.gate.direction} by at least {plan.gate.min_change * 100:.1f}%"
        + "".join(f"; guard {g.metric} at most {g.max_regression * 100:.1f}% worse" for g in plan.gate.guards)
    )
    for name, changed in checked.changes.items():
        for change in changed:
            print(f"  {name} changes {change}")
    for warning in checked.warnings:
        print(f"  note: {warning}")
    return 0


def _run_dir(text: str) -> RawDir:
    path = Path(text).expanduser()
    if not path.is_dir() and (bench_dir() / text).is_dir():
        path = bench_dir() / text  # a name from `rigctl bench list`
    if not path.is_dir():
        raise BadInputError(f"{text}: no such run directory (rigctl bench list shows the kept ones)")
    return RawDir(path)


def _report(args: argparse.Namespace, text: str) -> int:
    data = reload(_run_dir(text))
    if args.json:
        common.print_json(data)
    else:
        print(render(data))
    return 0


def _list(args: argparse.Namespace) -> int:
    rows = list_rows()
    if args.json:
        common.print_json([dict(zip(rows[0], row, strict=True)) for row in rows[1:]])
    elif len(rows) == 1:
        print(f"no kept runs in {bench_dir()}")
    else:
        print(fmt.table(rows))
    return 0


def _calibrate(args: argparse.Namespace, name: str) -> int:
    """The plan's control on N fresh servers; the spread of each figure kept as the rig's noise."""
    from rigctl.bench.calibrate import MAX_RUNS, MIN_RUNS, calibrate
    from rigctl.rules import Count

    common.check_flags(args, {"runs": Count("fresh boots", MIN_RUNS, MAX_RUNS)})
    plan = load_plan(name)
    console = Console(args.verbose, args.progress)
    ctx = make_context(args, console.event)
    stop = threading.Event()

    def on_ctrl_c() -> bool:
        stop.set()
        console.say("Ctrl-C: stopping; the control serves again at the end (Ctrl-C again to leave at once)")
        return True

    try:
        with two_stage_interrupt(on_ctrl_c, sigterm=True):  # SIGTERM as the first Ctrl-C (see _bench)
            checked = check_plan(ctx, plan)
            done = calibrate(ctx, checked, args.runs, on_progress=console.progress, stop=stop, lock_wait=args.wait)
    finally:
        if ctx.sampler:
            ctx.sampler.close()
    metric = plan.gate.metric
    data = {
        "plan": plan.name,
        "control": plan.control,
        "runs": args.runs,
        "status": done.result.status,
        "message": done.result.message,
        "metric": metric,
        "values": done.values,
        "noise": done.noise.to_json() if done.noise else None,
        "raw_dir": str(done.result.raw.path),
    }
    if args.json:
        common.print_json(data)
        return 0 if done.noise else 1
    if done.noise is None:
        print(
            f"not calibrated: {done.result.message or 'the runs did not all complete'} (raw: {done.result.raw.path})",
            file=sys.stderr,
        )
        return 1
    rows = [["figure", *[f"run {n}" for n in range(1, args.runs + 1)], "spread"]]
    for name_, values in sorted(done.values.items()):
        if name_ in done.noise.spread and (name_ == metric or name_ in {g.metric for g in plan.gate.guards}):
            rows.append([name_, *[f"{v:,.4g}" for v in values], f"{done.noise.spread[name_] * 100:.1f}%"])
    print(fmt.table(rows))
    gate_noise = done.noise.of(metric)
    print(
        f"kept for {done.noise.rig} / {plan.control} under this plan's workload: "
        + (
            f"a bench of {plan.name} never promotes a change on {metric} within {gate_noise * 100:.1f}% "
            f"(calibrate again after 14 days)"
            if gate_noise is not None
            else f"{metric} was not measured"
        )
    )
    print(f"raw: {done.result.raw.path}")
    return 0


def _run_estimate(plan: BenchPlan) -> Estimate:
    from rigctl.bench.eta import before_the_run, last_boots

    arms = plan.arms()
    return before_the_run(arms, last_boots([p for _, p in arms]), plan.workload.duration_s)
