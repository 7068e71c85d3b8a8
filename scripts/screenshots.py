"""Regenerate the README's screenshots (SVG, Textual's own screenshot export) from the real app
on a simulated rig: the dashboard under load, and a switch that fails and rolls back.

Run:  python scripts/screenshots.py [--out docs]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import tempfile
from pathlib import Path

RIG = "2x3090-nvlink"
GOOD = "qwen36-27b-awq-tp2"
TOO_LONG = "qwen36-27b-awq-tp2-1m"  # asks for a 1M context: the KV cache cannot hold it


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def isolate() -> Path:
    home = Path(tempfile.mkdtemp(prefix="rigctl-shots-"))
    os.environ.update({"RIGCTL_STATE_DIR": str(home / "state"), "RIGCTL_CONFIG_DIR": str(home / "config"),
                       "RIGCTL_SIM": RIG, "RIGCTL_SIM_TIME_SCALE": "0.02"})
    user = home / "config" / "profiles"
    user.mkdir(parents=True)
    (user / "qwen36-27b-base.toml").write_text(f'extends = "qwen36-27b-base"\n[vllm]\nport = {free_port()}\n')
    (user / f"{TOO_LONG}.toml").write_text(f'description = "AWQ TP=2 at a 1M context"\nextends = "{GOOD}"\n'
                                           "[vllm]\nmax_model_len = 1048576\n")
    return home


async def shoot(out: Path) -> None:
    from rigctl.cli.serving import make_context
    from rigctl.serve import switch as transaction
    from rigctl.serve.record import read_record
    from rigctl.sim.loadgen import LoadGenerator
    from rigctl.tui.app import make_app

    ctx = make_context(argparse.Namespace(sim=RIG))
    assert transaction.switch(ctx, GOOD).status == "switched"
    record = read_record()
    assert record is not None
    load = LoadGenerator(lambda: (record.base_url, record.served_names[0]), users=4)
    load.start()
    try:
        app = make_app(ctx.sampler, ctx, poll_interval=1.0)
        async with app.run_test(size=(100, 34)) as pilot:
            await pilot.pause(8)  # sparklines fill, interval figures settle
            app.save_screenshot("dashboard.svg", str(out))
            app.start_serving_action(TOO_LONG, lambda c: transaction.switch(c, TOO_LONG))
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
    isolate()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    asyncio.run(shoot(out))
    print(f"wrote {out / 'dashboard.svg'} and {out / 'switch-rollback.svg'}")


if __name__ == "__main__":
    main()
