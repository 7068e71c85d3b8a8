"""rigctl report: what each profile did while it served, side by side, from the record (or
from Prometheus when `[prometheus] url` is set)."""

from __future__ import annotations

import argparse
import os
import re
import time
from datetime import datetime

from rigctl.cli import common
from rigctl.errors import BadInputError

DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "report")
    p.add_argument("profiles", nargs="*", metavar="PROFILE", help="the profiles to compare (default: all that served)")
    p.add_argument("--since", metavar="T", help="e.g. 24h, 7d, or 2026-11-30 or 2026-11-30T14:00")
    p.add_argument("--until", metavar="T", help="as --since (default: now)")
    p.add_argument("--by-boot", action="store_true", help="one column per boot instead of per profile")
    p.add_argument("--bench", action="store_true", help="the benches' own traffic instead (kept apart from real use)")
    p.add_argument(
        "--source",
        choices=("auto", "record", "prometheus"),
        default="auto",
        help="the record file, or Prometheus ([prometheus] url); auto: Prometheus when configured",
    )
    common.add_json_flag(p)
    p.set_defaults(handler=run)


def when(text: str | None, flag: str, now: float) -> float | None:
    if text is None:
        return None
    m = DURATION.match(text.strip())
    if m:
        return now - float(m.group(1)) * UNIT[m.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise BadInputError(f"{flag} {text!r}: give a duration (30m, 24h, 7d) or a date (2026-11-30[T14:00])") from None


def run(args: argparse.Namespace) -> int:
    from rigctl.config import load_settings
    from rigctl.record import events
    from rigctl.record.derive import by_boot, by_profile, thresholds_of
    from rigctl.record.reader import ROWS_AT_MOST, RecordReader
    from rigctl.record.table import render

    now = time.time()
    since, until = when(args.since, "--since", now), when(args.until, "--until", now)
    if since is not None and until is not None and since >= until:
        raise BadInputError("--since must be before --until")
    settings = load_settings()
    url, limits = settings.prometheus_url, thresholds_of(settings)
    source = args.source if args.source != "auto" else ("prometheus" if url else "record")
    if source == "prometheus":
        if not url:
            raise BadInputError("--source prometheus needs [prometheus] url in config.toml")
        from rigctl.record.prometheus import PrometheusSource

        source_rows = PrometheusSource(url, timeout=settings.prometheus_timeout, min_step=settings.record_interval)
        rows = source_rows.rows(since if since is not None else now - 86400, until or now)
        where = url
    else:
        reader = RecordReader()
        # RIGCTL_REPORT_ROWS_AT_MOST: benchmarks/bench_report_rows.py --exact reads every row, as before
        most = int(os.environ.get("RIGCTL_REPORT_ROWS_AT_MOST", "0") or 0) or ROWS_AT_MOST
        rows = reader.rows_at_most(since, until, args.profiles or None, most)
        where = str(reader.path)
    from rigctl.record.rows import bench_plan_of

    benched = sorted({plan for r in rows if (plan := bench_plan_of(r.boot))})
    rows = [r for r in rows if bool(bench_plan_of(r.boot)) == args.bench]
    if benched and not args.bench and not args.json:
        print(f"note: the traffic of bench {', '.join(benched[:4])} is left out (rigctl report --bench shows it)")
    if args.profiles:
        known = {r.profile for r in rows}
        missing = [p for p in args.profiles if p not in known]
        if missing and not args.json:
            print(f"note: nothing recorded for {', '.join(missing)} in that window")
        rows = [r for r in rows if r.profile in args.profiles]
    alerts = RecordReader().events(since, until)  # rigctl's own: in the record whatever the rows' source
    if args.profiles:  # a GPU's alert is no profile's: kept
        alerts = [e for e in alerts if e.profile is None or e.profile in args.profiles]
    asked = [p for p in args.profiles if p in {r.profile for r in rows}] or None
    from rigctl.record.prefix_fault import explain

    columns = by_boot(rows, limits, explain) if args.by_boot else by_profile(rows, asked, limits, explain)
    if args.json:
        common.print_json(
            {
                "source": source,
                "from": where,
                "since": since,
                "until": until or now,
                "bench": args.bench,
                "benches_left_out": [] if args.bench else benched,
                "profiles": [c.to_json() for c in columns],
                "alerts": [e.to_json() for e in alerts],
            }
        )
        return 0
    if not columns:
        print(f"nothing recorded yet ({where}); run `rigctl watch` (or keep the TUI open) while a profile serves")
    else:
        print(render(columns, where))
    for line in events.render(alerts):
        print(line)
    return 0
