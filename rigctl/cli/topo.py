"""`rigctl topo [--json]`: what `nvidia-smi topo -m` and `topo -p2p` show, plus links."""

from __future__ import annotations

import argparse

from rigctl.cli import common
from rigctl.gpu.model import to_jsonable
from rigctl.gpu.report import topology_json
from rigctl.gpu.sampler import RigSampler
from rigctl.gpu.topology import render_links, render_matrix, render_p2p
from rigctl.gpu.warnings import all_reduce_verdict, slot_limit


def register(sub: common.Subparsers) -> None:
    parser = common.add_command(sub, "topo")
    common.add_json_flag(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    sampler: RigSampler = common.open_sampler(args, with_host=False)
    try:
        info, topology = sampler.info, sampler.topology
    finally:
        sampler.close()
    notes = [w for w in [all_reduce_verdict(info, topology), *(slot_limit(g) for g in info.gpus)] if w]
    if args.json:
        data: dict[str, object] = {
            "backend": info.backend,
            "gpus": [
                {
                    "index": g.index,
                    "name": g.name,
                    "bus_id": g.bus_id,
                    "nvlinks": to_jsonable(g.nvlinks),
                    "pcie": {
                        "link_gen_max": g.pcie_gen_max,
                        "link_width_max": g.pcie_width_max,
                        "gpu_gen_max": g.pcie_gpu_gen_max,
                        "gpu_width_max": g.pcie_gpu_width_max,
                    },
                }
                for g in info.gpus
            ],
            "notes": [to_jsonable(n) for n in notes],
        }
        data.update(topology_json(info, topology))
        common.print_json(data)
        return 0
    print(render_matrix(info, topology))
    print()
    print(render_p2p(info, topology))
    print()
    print(render_links(info))
    if notes:
        print()
        for note in notes:
            print(f"[{note.severity}] {note.message}")
    return 0
