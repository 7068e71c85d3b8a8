"""rigctl exporter: the rig's GPUs and what rigctl serves on it, as one Prometheus target. Read at
scrape time (no polling between scrapes); loopback unless --listen names another address."""

from __future__ import annotations

import argparse
import socket
import sys
import threading

from rigctl.cli import common
from rigctl.errors import BadInputError
from rigctl.signals import StopOnSignal


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "exporter")
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="where to serve /metrics (default: [exporter] listen, 127.0.0.1:9477); "
        "an address other than loopback is taken only from here",
    )
    p.add_argument("--rig", metavar="NAME", help="the rig label (default: [exporter] rig, else the hostname)")
    p.add_argument(
        "--engine",
        action="store_true",
        help="also serve the served vLLM's own /metrics, each sample with the rig label (one scrape job a rig)",
    )
    p.add_argument("--once", action="store_true", help="print one scrape's exposition and exit (no server)")
    p.add_argument("--rules", action="store_true", help="print Prometheus alerting rules for these series and vLLM's")
    p.add_argument("--grafana", action="store_true", help="print a Grafana dashboard (JSON) for rigs that run the exporter")
    p.set_defaults(handler=run)


def say(text: str) -> None:
    print(f"rigctl exporter: {text}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry, generate_latest

    from rigctl.config import load_settings
    from rigctl.errors import NoDriverError
    from rigctl.exporter.collector import RigCollector
    from rigctl.exporter.server import make_exporter
    from rigctl.listen import is_loopback, parse_listen

    settings = load_settings()
    if args.rules or args.grafana:
        from rigctl.exporter.grafana import dashboard_json
        from rigctl.exporter.rules import rules_file

        sys.stdout.write(rules_file(settings) if args.rules else dashboard_json())
        return 0
    given = args.listen is not None
    where = "--listen" if given else f"{settings.sources.get('exporter_listen', 'default')}: exporter.listen"
    host, port = parse_listen(args.listen if given else settings.exporter_listen, where)
    if not is_loopback(host) and not given:
        raise BadInputError(
            f"{where}: refusing to serve the rig's state on {host} from the config; "
            f"say it on the command line to mean it: rigctl exporter --listen {host}:{port}"
        )
    rig = args.rig or settings.exporter_rig or socket.gethostname()
    try:
        rig.encode("utf-8")
    except UnicodeEncodeError:
        # argv bytes that are not UTF-8 reach Python as lone surrogates, which no exposition can carry
        shown = rig.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise BadInputError(f"--rig {shown!r}: not UTF-8 text; a Prometheus label value must be") from None
    try:
        sampler = common.open_sampler(args, with_host=False)
    except NoDriverError:
        sampler = None  # what serves is still worth exporting (a CPU build of vLLM)
    collector = RigCollector(sampler, settings, rig, engine=args.engine)
    try:
        if args.once:
            registry = CollectorRegistry(auto_describe=False)
            registry.register(collector)
            sys.stdout.write(generate_latest(registry).decode())
            return 0
        try:
            server = make_exporter(collector, host, port)
        except OSError as exc:
            raise BadInputError(f"{where}: cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        stop = StopOnSignal()  # a flag and a pipe: a handler that took a lock could deadlock the wait below
        threading.Thread(target=server.serve_forever, name="rigctl-exporter", daemon=True).start()
        shown = f"[{host}]" if ":" in host else host
        say(f"serving rig {rig!r} on http://{shown}:{port}/metrics" + ("" if sampler else " (no GPU driver: no GPU series)"))
        if not is_loopback(host):
            say(f"listening beyond loopback ({host}): anyone who reaches this port reads the rig's state")
        stop.wait()
        stop.close()
        server.shutdown()
        server.server_close()
        say("stopped")
        return 0
    finally:
        if sampler:
            sampler.close()
