"""rigctl rigs: every rig the owner's Prometheus knows (each running `rigctl exporter`), with what
it serves, its pool and usage, hit rate, tok/s, power, the alerts firing and rigctl's last state;
with --litellm, the config of LiteLLM's proxy that puts the rigs of `[rigs.NAME] url` behind one
address, routed by the context each was started with (rigctl/router/litellm.py)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rigctl import fmt
from rigctl.cli import common
from rigctl.errors import BadInputError


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "rigs")
    p.add_argument("--prometheus", metavar="URL", help="the Prometheus to ask (default: [prometheus] url)")
    common.add_json_flag(p)
    router = p.add_argument_group("several rigs behind one address (LiteLLM's proxy)")
    router.add_argument(
        "--litellm", action="store_true", help="print a LiteLLM proxy config (YAML) for the rigs with a url, read live"
    )
    router.add_argument("--out", type=Path, metavar="DIR", help="write litellm.yaml and its hook there; say what changed")
    router.add_argument(
        "--timeout", type=float, default=900.0, metavar="S", help="seconds an answer not streamed may take (default 900)"
    )
    router.add_argument("--master-key-env", default="LITELLM_MASTER_KEY", metavar="NAME", help="the proxy's master key's variable")
    router.add_argument(
        "--largest-decides",
        action="store_true",
        help="a prompt too long for every rig by LiteLLM's count goes to the largest, whose vLLM decides (seed 000's rule)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.litellm or args.out:
        return litellm(args)
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


def litellm(args: argparse.Namespace) -> int:
    from rigctl.atomic import write_text_atomic
    from rigctl.config import config_path, load_settings
    from rigctl.router.litellm import CONFIG_FILE, HOOKS_MODULE, RouterOptions, changes, hooks_source, render
    from rigctl.router.reading import read_rig
    from rigctl.rules import Seconds

    common.check_flags(args, {"timeout": Seconds(low=1, high=86_400)})
    if not args.master_key_env.replace("_", "").isalnum():
        raise BadInputError(f"--master-key-env: must be the name of an environment variable, not {args.master_key_env!r}")
    rigs = [rig for rig in load_settings().rigs if rig.url]
    if not rigs:
        raise BadInputError(
            f'no rig with a url in {config_path()}: add [rigs.NAME] url = "http://HOST:PORT" (where its apps connect) for each rig'
        )
    readings = [read_rig(rig) for rig in rigs]
    for reading in readings:
        if reading.problem:
            print(f"rigctl rigs: {reading.rig} ({reading.url}) {reading.problem}: left out of the config", file=sys.stderr)
    if all(reading.problem for reading in readings):
        raise BadInputError("no rig answered: nothing to route to (each is said above)")
    options = RouterOptions(args.timeout, args.master_key_env, args.largest_decides, hooks=args.out is not None)
    text = render(readings, options)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    target = args.out / CONFIG_FILE
    before = target.read_text(errors="replace") if target.is_file() else None
    write_text_atomic(args.out / f"{HOOKS_MODULE}.py", hooks_source(options))
    write_text_atomic(target, text)
    print(f"wrote {target} and {args.out / HOOKS_MODULE}.py ({sum(len(r.models) for r in readings if not r.problem)} deployments)")
    if before is None:
        print(f"start the proxy: {args.master_key_env}=... LITELLM_LOCAL_MODEL_COST_MAP=True litellm --config {target}")
        return 0
    said = changes(before, readings, options)
    for line in said:
        print(f"  {line}")
    print("restart the LiteLLM proxy to load it" if said else "no rig's context changed: the running proxy routes as this does")
    return 0
