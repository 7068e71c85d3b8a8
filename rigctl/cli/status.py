"""`rigctl status [--json]`: the rig at a glance, and what it serves (verified, never assumed)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from rigctl.bench.live import read_live
from rigctl.cli import common
from rigctl.cli.rig_text import status_text
from rigctl.config import load_settings
from rigctl.errors import NoDriverError
from rigctl.gpu.report import snapshot_json
from rigctl.serve.serving import observe


def register(sub: Any) -> None:
    parser = common.add_command(sub, "status")
    common.add_json_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings()
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
    cut = read_live()
    if cut is not None and cut.cut_short:
        serving = dataclasses.replace(serving, notes=(*serving.notes, cut.note(serving.active_profile)))
    cache = prefix_cache(serving.record) if serving.active_profile and serving.record else None
    fell = hit_rate_fall(serving.record, settings) if serving.active_profile and serving.record else None
    if args.json:
        common.print_json({"rig": snapshot_json(snapshot) if snapshot else None,
                           **({} if snapshot else {"rig_error": rig_error}), "serving": serving.to_json(),
                           "prefix_cache": cache, "hit_rate_regression": fell.to_json() if fell else None})
    else:
        print(f"serving: {serving.summary}")
        for note in serving.notes:
            print(f"  note: {note}")
        if cache is not None:
            print(f"  prefix cache: {cache['summary']}")
        if fell is not None:
            print(f"  warning: {fell.describe()}")
        print(status_text(snapshot) if snapshot else f"rig: {rig_error}")
    return 0


def prefix_cache(record: Any) -> dict[str, Any] | None:
    """Queries and hits since the boot, from the engine; cold when both are zero (the owners'
    rule before a comparison)."""
    from rigctl.engine.client import EngineClient, EngineHTTPError
    from rigctl.engine.prom import ExpositionError

    try:
        with EngineClient(record.base_url, timeout=2.0) as client:
            snap = client.metrics(0.0)
    except (EngineHTTPError, ExpositionError):
        return None
    queries, hits = snap.counter("prefix_queries"), snap.counter("prefix_hits")
    if queries is None or hits is None:
        return None
    cold = queries == 0 and hits == 0
    summary = ("cold: no query and no hit since the boot" if cold else
               f"warm: {hits:,.0f} of {queries:,.0f} queried tokens hit ({hits / queries:.1%}) since the boot"
               if queries else f"warm: {hits:,.0f} hits")
    return {"queries": queries, "hits": hits, "cold": cold, "summary": summary}


def hit_rate_fall(record: Any, settings: Any) -> Any:
    """The switch to what serves now collapsed the hit rate, by the serving record."""
    from rigctl.errors import RigctlError
    from rigctl.record.derive import current_regression, thresholds_of
    from rigctl.record.recorder import boot_key
    from rigctl.record.store import RecordReader

    try:
        rows = RecordReader().switch_rows(boot_key(record))
    except RigctlError:
        return None
    return current_regression(rows, boot_key(record), thresholds_of(settings)) if rows else None
