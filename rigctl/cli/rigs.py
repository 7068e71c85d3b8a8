"""rigctl rigs: every rig the owner's Prometheus knows (each running `rigctl exporter`), with what
it serves, its pool and usage, hit rate, tok/s, power, the alerts firing and rigctl's last state."""

from __future__ import annotations

import argparse
import time

from rigctl import fmt
from rigctl.cli import common
from rigctl.errors import BadInputError


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "rigs")
    p.add_argument("--prometheus", metavar="URL", help="the Prometheus to ask (default: [prometheus] url)")
    common.add_json_flag(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rigctl.config import load_settings
    from rigctl.exporter.rigs import read_rigs
    from rigctl.record.prometheus import PrometheusSource

    settings = load_settings()
    url = args.prometheus or settings.prometheus_url
    if not url:
        raise BadInputError("rigctl rigs needs a Prometheus: --prometheus URL, or [prometheus] url in config.toml")
    if not url.startswith(("http://", "https://")):
        raise BadInputError(f'--prometheus: must be an http(s) URL, e.g. "http://127.0.0.1:9090", not {url!r}')
    rows = read_rigs(PrometheusSource(url, timeout=settings.prometheus_timeout))
    if args.json:
        common.print_json({"prometheus": url, "rigs": [row.to_json() for row in rows]})
        return 0
    if not rows:
        print(f"no rig in {url}: none of its targets is a rigctl exporter (rigctl exporter, then a scrape job for it)")
        return 0
    now = time.time()
    for row in rows:
        what = f"{row.profile} ({row.model}, TP={row.tp} DP={row.dp}, vLLM {row.vllm_version})" if row.profile else "nothing"
        since = f" for {fmt.seconds(now - row.state_since)}" if row.state_since else ""
        print(f"{row.rig}: {'serving' if row.up else 'DOWN'} {what}; rigctl: {row.state or 'n/a'}{since}")
        print(
            f"  KV pool {fmt.count(row.kv_pool_tokens)} tokens, usage {fmt.frac_pct(row.kv_usage)}; max_model_len "
            f"{fmt.count(row.max_model_len)}; hit rate {fmt.frac_pct(row.hit_rate)}; {fmt.number(row.tok_per_s)} tok/s; "
            f"{fmt.watts(row.power_w)}"
        )
        if row.last_switch:
            ago = f" {fmt.seconds(now - row.last_switch_at)} ago" if row.last_switch_at else ""
            print(f"  last {row.last_switch}{ago}")
        if row.alerts:
            print(f"  alerts firing: {', '.join(row.alerts)}")
    return 0
