"""Regenerate the README's screenshots (SVG, Textual's own screenshot export) from the real app
on a simulated rig: the dashboard under load, and a switch that fails and rolls back.

Run:  python scripts/screenshots.py [--out docs]
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

RIG = "2x3090-nvlink"


async def shoot(out: Path) -> None:
    from rigctl.cli.serving import make_context
    from rigctl.cli.tui import DEMO_FAILS, prepare_demo_home
    from rigctl.gpu.sampler import RigSampler
    from rigctl.serve import switch as transaction
    from rigctl.sim.loadgen import LoadGenerator
    from rigctl.state.statefiles import read_record
    from rigctl.tui.app import make_app

    os.environ["RIGCTL_SIM_TIME_SCALE"] = "0.02"
    _, good = prepare_demo_home(RIG)
    ctx = make_context(argparse.Namespace(sim=RIG))
    ctx.sampler = RigSampler(ctx.sampler.backend)  # with the host line, as `rigctl` shows it
    assert transaction.switch(ctx, good).status == "switched"
    record = read_record()
    assert record is not None
    load = LoadGenerator(lambda: (record.base_url, record.served_names[0]), users=4)
    load.start()
    try:
        app = make_app(ctx.sampler, ctx, poll_interval=1.0)
        async with app.run_test(size=(100, 34)) as pilot:
            await pilot.pause(8)  # sparklines fill, interval figures settle
            app.save_screenshot("dashboard.svg", str(out))
            app.start_serving_action(DEMO_FAILS, lambda c: transaction.switch(c, DEMO_FAILS))
            for _ in range(600):
                await pilot.pause(0.1)
                if app.boot is not None and app.boot.done:
                    break
            await pilot.pause(0.5)
            app.save_screenshot("switch-rollback.svg", str(out))
    finally:
        load.stop()
        transaction.stop(ctx)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "docs"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    asyncio.run(shoot(out))
    print(f"wrote {out / 'dashboard.svg'} and {out / 'switch-rollback.svg'}")


if __name__ == "__main__":
    main()
