"""rigctl capture: the front door's recording in front of one server, by its old name. It is
`rigctl gateway --to URL --listen HOST:PORT --out TRACE.jsonl` (the same process, with every bound
and refusal of the door): the apps talk to it as they would to vLLM, and each generation request
they send is kept in the trace a bench replays ([workload] trace = "PATH")."""

from __future__ import annotations

import argparse
from pathlib import Path

from rigctl.cli import common

DEFAULT_LISTEN = "127.0.0.1:8001"


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "capture")
    p.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"where the apps connect instead of vLLM (default {DEFAULT_LISTEN})",
    )
    p.add_argument(
        "--out", required=True, type=Path, metavar="TRACE.jsonl", help="the trace to write (0600; never over an existing file)"
    )
    p.add_argument("--to", metavar="URL", help="the server to forward to (default: the one rigctl started, or [server] endpoint)")
    p.add_argument("--duration", type=float, metavar="S", help="end after this many seconds")
    p.add_argument("--max-requests", type=int, metavar="N", help="end after this many requests are recorded")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from rigctl.cli import gateway

    upstream, _, _ = common.served_endpoint(args.to, flag="--to")
    door = argparse.Namespace(
        listen=args.listen,
        to=upstream,
        allow_remote=False,  # a capture is the owner's own, on loopback: `rigctl gateway` opens beyond it
        api_key_file=None,
        grace=30.0,
        record=True,
        out=args.out,
        duration=args.duration,
        max_requests=args.max_requests,
        status=False,
        json=False,
    )
    return gateway.run(door, who="capture")
