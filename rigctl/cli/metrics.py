"""`rigctl metrics`: vLLM's /metrics as the figures an owner reads, live or from saved scrapes.

rigctl metrics [--json] [--watch] [--interval S]           the server rigctl runs (or --url)
rigctl metrics --file BEFORE --file AFTER --seconds S       two saved scrapes, offline
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rigctl import jsonio
from rigctl.cli import common
from rigctl.engine import report
from rigctl.engine.client import EngineClient, EngineHTTPError
from rigctl.engine.derive import IntervalFigures, interval
from rigctl.engine.http_get import MAX_BODY
from rigctl.engine.metrics import EngineSnapshot, snapshot
from rigctl.engine.prom import ExpositionError, parse, sample_lines
from rigctl.errors import BadInputError, NoDriverError, RigctlError
from rigctl.files import read_input
from rigctl.gpu.holders import serving_gpus
from rigctl.gpu.model import GpuSample
from rigctl.gpu.sampler import RigSampler
from rigctl.rules import Count, Seconds
from rigctl.vllm.metric_names import SNAPSHOT_NAMES, P


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "metrics")
    common.add_json_flag(p)
    p.add_argument("--watch", action="store_true", help="repeat every interval (JSON: one object per line)")
    p.add_argument("--interval", type=float, default=2.0, metavar="S", help="seconds between scrapes (2)")
    p.add_argument("--count", type=int, metavar="N", help="stop after N intervals")
    p.add_argument("--url", help="the server's base URL (default: the one rigctl started, or config endpoint)")
    p.add_argument("--file", action="append", metavar="PROM", help="a saved scrape (give two for interval figures)")
    p.add_argument("--seconds", type=float, help="with two --file: the seconds between the scrapes")
    p.set_defaults(handler=run)


def _load_file(path: str) -> EngineSnapshot:
    # a scrape: what HttpGet would take from a live /metrics at most
    text = read_input(path, MAX_BODY, "saved scrape").decode("utf-8", errors="replace")
    try:
        found = snapshot(parse(text, names=SNAPSHOT_NAMES), Path(path).stat().st_mtime)
    except ExpositionError as exc:
        raise BadInputError(f"{path}: {exc}") from exc
    if not found.is_vllm:
        raise BadInputError(f"{path}: {_lacking(text)}")
    if found.refused:  # a saved scrape is an input as a config is: a value no engine gives is refused, named
        more = f" (and {len(found.refused) - 1} more)" if len(found.refused) > 1 else ""
        raise BadInputError(f"{path}: {found.refused[0]}{more}")
    return found


def _lacking(text: str) -> str:
    """Why a scrape gives no figure: no vLLM family at all, or only families rigctl does not read
    (named, with the ones it reads)."""
    try:
        families = sorted(name for name in parse(text).samples if name.startswith(P))
    except ExpositionError:
        families = []
    if not families:
        return "not a Prometheus text exposition of vLLM: none of vLLM's metrics is in it"
    shown = ", ".join(families[:4]) + (f" and {len(families) - 4} more" if len(families) > 4 else "")
    return (
        f"it holds {len(families)} of vLLM's families ({shown}) but none rigctl reads a figure from "
        f"(the running and waiting requests, KV cache usage, the token and prefix-cache counters, the latency "
        f"histograms: {P}num_requests_running, {P}kv_cache_usage_perc, {P}generation_tokens_total, ...)"
    )


def _emit(args: argparse.Namespace, snap: EngineSnapshot, figures: IntervalFigures | None, one_line: bool = False) -> None:
    if args.json:
        data = report.to_json(snap, figures)
        sys.stdout.write(jsonio.dumps(data, indent=None if one_line else 2) + "\n")
    else:
        print(report.text(snap, figures))
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    if args.file:
        if len(args.file) > 2:
            raise BadInputError("give one --file (a snapshot) or two (an interval)")
        first = _load_file(args.file[0])
        if len(args.file) == 1:
            _emit(args, first, None)
            return 0
        if args.seconds is None:
            raise BadInputError("two --file scrapes need --seconds: the time between them")
        common.check_flags(args, {"seconds": Seconds(positive=True)})
        _emit(args, _load_file(args.file[1]), interval(first, _load_file(args.file[1]), args.seconds))
        return 0
    common.check_flags(args, {"interval": Seconds(positive=True), "count": Count("intervals", 1)})
    url, key, pid = common.served_endpoint(args.url)
    try:
        sampler: RigSampler | None = common.open_sampler(args, with_host=False)
    except NoDriverError:
        sampler = None
    with EngineClient(url, key, timeout=5.0) as client:
        before, gpus_before = _scrape(client), _gpus(sampler)
        taken = 0
        while args.count is None or taken < args.count:
            time.sleep(args.interval)
            after, gpus_after = _scrape(client), _gpus(sampler)
            serving = frozenset(serving_gpus(gpus_after, pid)) or None
            _emit(args, after, interval(before, after, None, gpus_before, gpus_after, serving), one_line=args.watch)
            taken += 1
            if not args.watch:
                break
            before, gpus_before = after, gpus_after
    if sampler:
        sampler.close()
    return 0


def _scrape(client: EngineClient) -> EngineSnapshot:
    """Only the families the figures need are parsed (a 40 MB exposition of many replicas would
    otherwise be held whole, every sample of it)."""
    try:
        text = client.metrics_text()
        exposition = parse(text, names=SNAPSHOT_NAMES)
    except EngineHTTPError as exc:
        raise RigctlError(f"cannot read {client.base_url}/metrics: {exc}") from exc
    except ExpositionError as exc:
        raise RigctlError(f"{client.base_url}/metrics: {exc}") from exc
    found = snapshot(exposition, time.time())
    if not found.is_vllm:
        raise RigctlError(
            f"{client.base_url}/metrics answered, but with no vLLM metrics "
            f"({sample_lines(text):,} other samples): is a vLLM server listening there?"
        )
    return found


def _gpus(sampler: RigSampler | None) -> tuple[GpuSample, ...]:
    return sampler.snapshot().samples if sampler else ()
