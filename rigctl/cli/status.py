"""`rigctl status [--json]`: the rig at a glance, and what it serves (verified, never assumed)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from rigctl import paths
from rigctl.bench.rawdir import live_file
from rigctl.cli import common
from rigctl.cli.rig_text import status_text
from rigctl.config import load_settings
from rigctl.errors import BadInputError, NoDriverError, RigctlError
from rigctl.gpu.report import snapshot_json
from rigctl.serve.lock import rig_holder
from rigctl.state.serving import observe

if TYPE_CHECKING:
    from rigctl.config import Settings
    from rigctl.state.statefiles import ServerRecord


def register(sub: common.Subparsers) -> None:
    parser = common.add_command(sub, "status")
    common.add_json_flag(parser)
    parser.add_argument(
        "--check",
        action="store_true",
        help="one line and an exit code for scripts: 0 healthy, 7 down, 8 degraded (an alert fires)",
    )
    parser.add_argument(
        "--window",
        type=float,
        default=3.0,
        metavar="S",
        help="--check: seconds between the two /metrics scrapes that tell whether it serves (default 3)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings()
    if args.check:
        return run_check(args, settings)
    try:
        sampler = common.open_sampler(args)
    except NoDriverError as exc:
        if not common.serves_without_a_driver(settings):
            raise
        sampler, rig_error = None, str(exc)  # a CPU build of vLLM: what serves is still worth saying
    snapshot = None
    if sampler is not None:
        try:
            snapshot = sampler.snapshot()
        finally:
            sampler.close()
    serving = observe(settings, thorough=True)
    holder = rig_holder()
    if holder is not None:
        serving = dataclasses.replace(serving, notes=(f"the rig is held: {holder.said}", *serving.notes))
    cut = None
    if live_file().exists():  # the reader (3 ms of imports) only when a bench left its mark
        from rigctl.bench.live import read_live

        cut = read_live()
    if cut is not None and cut.cut_short:
        serving = dataclasses.replace(serving, notes=(*serving.notes, cut.note(serving.active_profile)))
    cache = fell = None
    if serving.active_profile and serving.record:
        # the record's reader (sqlite, the derivations) only when something serves: 18 ms of a status
        from rigctl.record.regression_watch import hit_rate_fall

        cache = prefix_cache(serving.record)
        fell = hit_rate_fall(serving.record, settings)
    watched = None
    if paths.alerts_file().exists():  # the reader (2 ms of imports) only when a watcher wrote
        from rigctl.alerts.firing import read_firing

        watched = read_firing()
    if args.json:
        common.print_json(
            {
                "rig": snapshot_json(snapshot) if snapshot else None,
                **({} if snapshot else {"rig_error": rig_error}),
                "serving": serving.to_json(),
                "held_by": holder.said if holder else None,  # a switch, stop or bench holding the rig now
                "prefix_cache": cache,
                "hit_rate_regression": fell.to_json() if fell else None,
                # what the watch service (or a TUI keeping the record) says fires; null: nothing watches
                "alerts": {"watched_by": watched.pid, "firing": list(watched.alerts)} if watched else None,
            }
        )
    else:
        print(serving.summary)
        for note in serving.notes:
            print(f"  note: {note}")
        if cache is not None:
            print(f"  prefix cache: {cache['summary']}")
        if fell is not None:
            print(f"  warning: {fell.describe()}")
        for line in watched.lines if watched else ():
            print(f"  alert: {line}")
        if watched is None:
            print("  alerts: nothing watches this rig (`rigctl watch`, or its systemd unit: docs/guide/record-and-watch.md)")
        print(status_text(snapshot) if snapshot else f"rig: {rig_error}")
    return 0


def run_check(args: argparse.Namespace, settings: Settings) -> int:
    """`status --check`: the verdict of serve/health.py, one line (or one JSON object), its exit code."""
    import time

    from rigctl.alerts.firing import read_firing
    from rigctl.engine.client import EngineClient, EngineHTTPError
    from rigctl.engine.prom import ExpositionError
    from rigctl.record.regression_watch import hit_rate_fall
    from rigctl.serve.health import benching, check_health
    from rigctl.serve.launchers import launcher_for

    if not 0 < args.window <= 600:
        raise BadInputError("--window must be in (0, 600] seconds")
    holder = rig_holder()
    if holder is not None and holder.bench:
        verdict = benching(holder.said)
        if args.json:
            common.print_json({**verdict.to_json(), "watched_by": None})
        else:
            print(verdict.line())
        return int(verdict.exit_code)
    serving = observe(settings, thorough=True)
    before = after = None
    record = serving.record
    if serving.active_profile and record is not None:
        key = launcher_for(record, settings).api_key(record)
        try:
            with EngineClient(record.base_url, key, timeout=5.0) as client:
                before = client.metrics(time.time())
                time.sleep(args.window)
                after = client.metrics(time.time())
        except (EngineHTTPError, ExpositionError):
            before = after = None
    fell = hit_rate_fall(record, settings) if serving.active_profile and record else None
    watched = read_firing()
    firing = [a for a in watched.alerts if a.get("kind") not in ("engine-died", "gpu-lost")] if watched else []
    if fell is not None and not any(a.get("kind") == "hit-rate" for a in firing):
        firing.insert(0, {"title": "prefix hit rate fell", "text": fell.describe(), "kind": "hit-rate"})
    result = check_health(serving, before, after, [f"{a.get('title')}: {a.get('text')}" for a in firing])
    if args.json:
        common.print_json({**result.to_json(), "watched_by": watched.pid if watched else None})
    else:
        print(result.line())
    return int(result.exit_code)


def prefix_cache(record: ServerRecord) -> dict[str, object] | None:
    """Queries and hits since the boot, from the engine; cold by the bench's rule (the owners'
    rule before a comparison): nothing but the boot's own verification reached the cache."""
    from rigctl.engine.client import EngineClient, EngineHTTPError
    from rigctl.engine.coldcache import cold_check, verification_baseline
    from rigctl.engine.prom import ExpositionError
    from rigctl.state.boots import read_all

    try:
        with EngineClient(record.base_url, timeout=2.0) as client:
            snap = client.metrics(0.0)
    except (EngineHTTPError, ExpositionError):
        return None
    queries, hits = snap.counter("prefix_queries"), snap.counter("prefix_hits")
    if queries is None or hits is None:
        return None
    try:
        boot = next((b for b in reversed(read_all()) if b.profile == record.profile and b.when >= record.started - 5), None)
    except (RigctlError, OSError):  # a damaged history says so elsewhere; the counters still answer
        boot = None
    check = cold_check(snap, baseline=verification_baseline({"verification": boot.verification}) if boot else None)
    summary = (
        check.describe()
        if check.cold
        else f"warm: {hits:,.0f} of {queries:,.0f} queried tokens hit ({hits / queries:.1%}) since the boot"
        if queries
        else f"warm: {hits:,.0f} hits"
    )
    return {"queries": queries, "hits": hits, "cold": check.cold, "summary": summary}
