"""`rigctl logs`, `rigctl history`, `rigctl bootlog`: the server's log, past boots, any log read."""

from __future__ import annotations

import argparse
import sys
import time
from collections import deque
from pathlib import Path

from rigctl import fmt
from rigctl.cli import common
from rigctl.config import load_settings
from rigctl.errors import BadInputError
from rigctl.files import bounded_lines, open_input
from rigctl.redact import redact_text
from rigctl.serve.launchers import launcher_for
from rigctl.state import boots
from rigctl.state.journal import Ending
from rigctl.state.serving import find_running
from rigctl.vllm.bootlog import read_bootlog


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "logs")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    p.add_argument("-n", "--lines", type=int, default=50, metavar="N", help="lines of history first (50)")
    p.set_defaults(handler=run_logs)
    p = common.add_command(sub, "history")
    common.add_json_flag(p)
    p.add_argument("--profile", help="only this profile")
    p.add_argument(
        "--switches",
        action="store_true",
        help="every switch, bench arm and stop as it ended (the switch journal): outcome, drain, verification",
    )
    p.set_defaults(handler=run_history)
    p = common.add_command(sub, "bootlog")
    p.add_argument("file", help="a log file, or - for standard input")
    common.add_json_flag(p)
    p.set_defaults(handler=run_bootlog)


def run_logs(args: argparse.Namespace) -> int:
    settings = load_settings()
    running = find_running(settings)
    for note in running.notes:
        print(f"rigctl: {note}", file=sys.stderr)
    record = running.record or running.stale
    if record is None:
        raise BadInputError("no server log: rigctl has not started a server here")
    if record.log_path:
        path = Path(record.log_path)
        try:
            with open(path, errors="replace") as handle:
                for line in deque(handle, maxlen=max(0, args.lines)):
                    sys.stdout.write(redact_text(line))
        except OSError as exc:
            raise BadInputError(f"{path}: {exc.strerror}") from exc
        sys.stdout.flush()
        if not args.follow:
            return 0
        follower = launcher_for(record, settings).follower(record, from_end=True)
    else:
        follower = launcher_for(record, settings).follower(record, from_end=not args.follow)
    try:
        while True:
            for line in follower.read_new():
                print(redact_text(line), flush=True)
            if not args.follow:
                return 0
            time.sleep(0.2)
    finally:
        follower.close()


def run_switches(args: argparse.Namespace) -> int:
    from rigctl.state.journal import journal_file, read_endings

    endings, damaged = read_endings()
    if damaged:
        print(f"rigctl: {journal_file()}: skipped {len(damaged)} damaged line(s)", file=sys.stderr)
    endings = [e for e in endings if not args.profile or e.target == args.profile]
    if args.json:
        common.print_json([e.to_json() for e in endings])
        return 0
    if not endings:
        print("no switch recorded yet")
        return 0
    rows = [("when", "action", "to", "outcome", "took", "drain", "verified")]
    for e in endings:
        drain = _drain_text(e)
        verified = "-" if e.verified is None else ("yes" if e.verified else f"FAILED {e.verify_failed or ''}".strip())
        if e.apps_refused:
            verified = f"REFUSED BY THE APPS: {e.apps_refused}"
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.when))
        rows.append((when, e.action, e.target, e.status, fmt.seconds(e.seconds), drain, verified))
    print(fmt.table(rows))
    return 0


def _drain_text(e: Ending) -> str:
    """What the drain saw: the requests seen to finish (only the front door sees them), those cut,
    and without a front door what vLLM's gauges said was running when it began."""
    if e.finished is None and e.cut is None:
        return "-"
    said = [f"{e.finished} finished"] if e.finished is not None else []
    if e.running is not None and e.finished is None:
        said.append(f"{e.running} running" if e.running else "none running")
    if e.cut or e.running or e.finished is not None:
        said.append(f"{e.cut} cut" if e.cut else "none cut")
    if e.held is not None:
        said.append(f"{e.held} held" + (f" up to {fmt.seconds(e.held_longest_s)}" if e.held else ""))
    if e.refused:
        said.append(f"{e.refused} refused")
    return ", ".join(said)


def run_history(args: argparse.Namespace) -> int:
    if args.switches:
        return run_switches(args)
    read = boots.read_history()
    if read.warning():
        print(f"rigctl: {read.warning()}", file=sys.stderr)
    records = [r for r in read.records if not args.profile or r.profile == args.profile]
    if args.json:
        common.print_json([r.to_json() for r in records])
        return 0
    if not records:
        print("no boots recorded yet")
        return 0
    rows = [("when", "profile", "KV capacity", "at max_model_len", "concurrency", "boot", "vLLM")]
    for r in records:
        rows.append(
            (
                time.strftime("%Y-%m-%d %H:%M", time.localtime(r.when)),
                r.profile,
                fmt.count(r.kv_tokens),
                fmt.count(r.max_model_len),
                "n/a" if r.max_concurrency is None else f"{r.max_concurrency:.2f}x",
                fmt.seconds(r.boot_seconds),
                r.vllm_version or "n/a",
            )
        )
    print(fmt.table(rows))
    print("KV capacity is vLLM's figure at max_model_len; for hybrid models it is concurrency x max_model_len.")
    return 0


def run_bootlog(args: argparse.Namespace) -> int:
    if args.file == "-":
        report = read_bootlog(bounded_lines(sys.stdin))
    else:
        with open_input(args.file, "boot log (give - to read a pipe)") as handle:
            report = read_bootlog(bounded_lines(handle))
    if report.failure is not None and report.failure.cause == "max_model_len":
        from rigctl.fit.check import model_max_len
        from rigctl.vllm.bootfailure import capped

        report.failure = capped(report.failure, model_max_len(report.model))
    if args.json:
        data = report.to_json()
        data["pool_tokens"] = report.pool_tokens
        common.print_json(data)
        return 0
    print(f"vLLM {report.version or 'version n/a'}" + (f", model {report.model}" if report.model else ""))
    for phase in report.phases:
        at = "" if phase.seconds is None else f"+{phase.seconds:.0f}s"
        print(f"  {at:>7}  {phase.label}")
    if report.pool_tokens is not None:
        derived = "" if report.kv_tokens is not None else f" ({report.gpu_blocks:,} blocks x {report.block_size or 16})"
        at = f" at {report.concurrency_len:,} tokens" if report.concurrency_len else ""
        conc = f", max concurrency {report.max_concurrency:.2f}x" if report.max_concurrency else ""
        print(f"KV capacity{at}: {report.pool_tokens:,} tokens{derived}{conc}")
    if report.available_kv_gib is not None:
        print(f"available KV memory: {report.available_kv_gib:.2f} GiB")
    if report.model_load_gib is not None:
        print(
            f"model load: {report.model_load_gib:.2f} GiB"
            + (f" in {report.model_load_seconds:.1f} s" if report.model_load_seconds else "")
        )
    if report.failure:
        f = report.failure
        print(f"FAILED ({f.cause}): {f.summary}\n  {f.line.strip()}" + (f"\n  fix: {f.suggestion}" if f.suggestion else ""))
        return 1
    print("ready" if report.ready else "no failure found (log incomplete or still booting)")
    return 0
