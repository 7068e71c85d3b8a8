"""rigctl record: keep the serving record headless (for boxes where nobody keeps the TUI open)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import TYPE_CHECKING

from rigctl.cli import common
from rigctl.errors import BadInputError

if TYPE_CHECKING:
    from rigctl.record.recorder import Notes
    from rigctl.record.rows import Row
    from rigctl.record.store import RecordWriter


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "record")
    p.add_argument("--interval", type=float, metavar="S", help="seconds per row (default: [record] interval, 10)")
    p.add_argument("--retention-days", type=float, default=30.0, metavar="D", help="rows older are dropped (30)")
    p.add_argument("-v", "--verbose", action="store_true", help="print a line per row written")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rigctl.config import load_settings
    from rigctl.errors import NoDriverError
    from rigctl.record.recorder import Notes, Recorder, ServingSource

    args.interval = args.interval or load_settings().record_interval
    if not 0.5 <= args.interval <= 3600:
        raise BadInputError("--interval must be between 0.5 and 3600 seconds")
    if args.retention_days <= 0:
        raise BadInputError("--retention-days must be positive")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    notes = Notes(lambda text: print(f"rigctl record: {text}", file=sys.stderr, flush=True))
    writer = open_writer(args.retention_days, notes, stop)
    if writer is None:
        print("stopped before the record could be opened", file=sys.stderr)
        return 0
    try:
        sampler = common.open_sampler(args, with_host=False)
    except NoDriverError:
        sampler = None  # the engine's figures still; no energy

    def said(row: Row) -> None:
        if args.verbose:
            print(
                f"{row.profile}: {row.requests:.0f} requests, {row.counts.get('prefix_queries', 0):,.0f} prefix "
                f"tokens queried in {row.seconds:.1f} s",
                flush=True,
            )

    print(
        f"recording to {writer.path} every {args.interval:g} s" + ("" if sampler else " (no GPU: no energy)"),
        file=sys.stderr,
        flush=True,
    )
    source = ServingSource(sampler, notes)
    recorder = Recorder(writer, args.interval, said, notes)
    try:
        recorder.run(source, stop)
    finally:
        source.close()
        writer.close()
        if sampler:
            sampler.close()
    print(f"stopped: {recorder.rows_written} rows written", file=sys.stderr)
    return 0


BACKOFF_MAX_S = 60.0


def open_writer(retention_days: float, notes: Notes, stop: threading.Event) -> RecordWriter | None:
    """The record's writer, waiting out trouble that passes by itself (a full disk, a lock another
    program holds) with a backoff of 1 s doubling to a minute, said once; None when stopped
    first. Trouble that will not pass (a damaged file, a read-only dir) and another recorder are
    raised: one line, exit 1."""
    from rigctl.record.store import RecordTrouble, RecordWriter

    wait = 1.0
    while True:
        try:
            writer = RecordWriter(retention_days=retention_days)
        except RecordTrouble as exc:
            if not exc.passing:
                raise
            notes.trouble("open", f"{exc}; trying again (every {BACKOFF_MAX_S:.0f} s at most)")
            if stop.wait(wait):
                return None
            wait = min(BACKOFF_MAX_S, wait * 2)
            continue
        notes.passed("open", f"the record is open ({writer.path})")
        return writer
