"""`rigctl gpus [--json] [--watch]`: live per-GPU figures."""

from __future__ import annotations

import argparse
import sys
import time

from rigctl import fmt, jsonio
from rigctl.cli import common
from rigctl.gpu.model import RigSnapshot, to_jsonable

COLUMNS = ("GPU", "VRAM", "util", "power", "temp", "fan", "SM", "PCIe", "procs")


def register(sub: common.Subparsers) -> None:
    parser = common.add_command(sub, "gpus")
    common.add_json_flag(parser)
    parser.add_argument("--watch", action="store_true", help="repeat until interrupted (JSON: one object per line)")
    parser.add_argument("--interval", type=float, default=1.0, metavar="S", help="seconds between samples (1.0)")
    parser.add_argument("--count", type=int, default=None, metavar="N", help="stop after N samples")
    parser.set_defaults(handler=run)


def rows(snapshot: RigSnapshot) -> list[tuple[str, ...]]:
    out = []
    for gpu in snapshot.info.gpus:
        s = snapshot.sample_for(gpu.index)
        if s is None or s.lost:
            out.append((f"{gpu.index}", "LOST", *("-" * 1 for _ in COLUMNS[2:])))
            continue
        out.append(
            (
                str(gpu.index),
                fmt.gib_pair(s.memory_used, gpu.memory_total),
                fmt.pct(s.util_gpu),
                f"{fmt.watts(s.power_w)}/{fmt.watts(gpu.power_limit_w)}",
                fmt.celsius(s.temperature_c),
                fmt.pct(s.fan_pct),
                fmt.mhz(s.sm_clock),
                fmt.pcie(s.pcie_gen, s.pcie_width),
                str(len(s.processes)) if s.processes is not None else "n/a",
            )
        )
    return out


def table(snapshot: RigSnapshot) -> str:
    return fmt.table([COLUMNS, *rows(snapshot)])


def gpus_json(snapshot: RigSnapshot) -> dict[str, object]:
    return {"timestamp": snapshot.timestamp, "backend": snapshot.info.backend, "gpus": [to_jsonable(s) for s in snapshot.samples]}


def run(args: argparse.Namespace) -> int:
    from rigctl.rules import Count, Seconds

    common.check_flags(args, {"interval": Seconds(positive=True), "count": Count("samples", 1)})
    sampler = common.open_sampler(args, with_host=False)
    count = args.count if args.count is not None else (None if args.watch else 1)
    taken = 0
    try:
        while count is None or taken < count:
            if taken:
                time.sleep(args.interval)
            snapshot = sampler.snapshot()
            taken += 1
            if args.json:
                if args.watch:
                    sys.stdout.write(jsonio.dumps(gpus_json(snapshot)) + "\n")
                else:
                    common.print_json(gpus_json(snapshot))
            else:
                if taken > 1:
                    print()
                print(table(snapshot))
            sys.stdout.flush()
    finally:
        sampler.close()
    return 0


def raise_bad(message: str) -> None:
    from rigctl.errors import BadInputError

    raise BadInputError(message)
