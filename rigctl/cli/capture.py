"""rigctl capture: a pass-through proxy in front of the served vLLM that keeps the apps' requests
as a trace `rigctl bench` replays ([workload] trace = "PATH")."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rigctl.cli import common
from rigctl.errors import BadInputError, RigctlError
from rigctl.fmt import seconds
from rigctl.redact import without_userinfo

if TYPE_CHECKING:
    from rigctl.capture.proxy import CaptureCounts, CaptureProxy

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
    p.add_argument("--max-requests", type=int, metavar="N", help="end after this many requests are traced")
    p.add_argument("-v", "--verbose", action="store_true", help="a line per traced request")
    p.set_defaults(handler=run)


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise BadInputError(f"--listen {text!r}: give HOST:PORT, e.g. {DEFAULT_LISTEN}")
    return host.strip("[]"), int(port)


def run(args: argparse.Namespace) -> int:
    from rigctl.capture.proxy import CaptureProxy, Exchange
    from rigctl.gateway.trace_file import TraceFile

    host, port = parse_listen(args.listen)
    if args.duration is not None and args.duration <= 0:
        raise BadInputError("--duration must be positive")
    if args.max_requests is not None and args.max_requests < 1:
        raise BadInputError("--max-requests must be at least 1")
    upstream, _, _ = common.served_endpoint(args.to, flag="--to")
    if not upstream.startswith(("http://", "https://")):
        raise BadInputError(f"--to {upstream!r}: give the server's base URL, e.g. http://127.0.0.1:8000")
    shown = without_userinfo(upstream)
    trace = TraceFile(args.out, shown, time.time())

    def said(exchange: Exchange) -> None:
        if args.verbose:
            tokens = f", {exchange.completion_tokens} tokens" if exchange.completion_tokens is not None else ""
            how = f" - {exchange.error}" if exchange.error else ""
            print(f"{exchange.endpoint} {exchange.status or '-'}{' stream' if exchange.stream else ''}{tokens}{how}", flush=True)

    proxy = CaptureProxy(upstream, trace, args.max_requests, said)
    began = time.monotonic()
    try:
        counts = asyncio.run(_serve(proxy, host, port, args.duration, shown, args.out))
    except OSError as exc:
        raise RigctlError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    finally:
        try:
            trace.close()
        except OSError as exc:
            proxy.trouble = proxy.trouble or f"{args.out}: the trace could not be flushed ({exc.strerror or exc})"
    tail = ", ".join(
        part
        for part in (
            f"{counts.streamed} streamed" if counts.streamed else "",
            f"{counts.failed} failed upstream (kept, marked)" if counts.failed else "",
            f"{counts.gone} hung up by the app before the answer ended (kept, marked)" if counts.gone else "",
            f"{counts.cut} cut off by the end of the capture" if counts.cut else "",
            f"{counts.passed} passed through untraced" if counts.passed else "",
        )
        if part
    )
    print(
        f"captured {counts.traced} request{'s' if counts.traced != 1 else ''}"
        f"{f' ({tail})' if tail else ''} in {seconds(time.monotonic() - began)} to {args.out}",
        file=sys.stderr,
    )
    if proxy.trouble:
        print(f"rigctl: {proxy.trouble}", file=sys.stderr)
        return 1
    return 0


async def _serve(proxy: CaptureProxy, host: str, port: int, duration_s: float | None, upstream: str, out: Path) -> CaptureCounts:
    loop = asyncio.get_running_loop()
    cut = asyncio.Event()
    signals = [0]

    def interrupted() -> None:
        signals[0] += 1
        if signals[0] == 1:
            proxy.stop.set()
            if proxy.in_flight:
                print(
                    f"ending: waiting for {proxy.in_flight} answer(s) in flight (Ctrl-C again cuts them)",
                    file=sys.stderr,
                    flush=True,
                )
        else:
            cut.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, interrupted)

    def ready(bound: int) -> None:
        print(
            f"capturing: point the apps at http://{host}:{bound} (forwarded to {upstream}); writing {out} "
            f"(0600: it holds their prompts). Ctrl-C ends it.",
            file=sys.stderr,
            flush=True,
        )

    return await proxy.serve(host, port, ready, duration_s, cut)
