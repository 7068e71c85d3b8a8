"""`rigctl` with no subcommand opens the TUI; `rigctl demo` opens it on a simulated rig with
the simulator serving a shipped profile under a light synthetic load."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from rigctl.cli import common

DEMO_RIG = "2x3090-nvlink"
DEMO_FAILS = "demo-boot-crashes"  # boots, dies while loading: the rollback to watch
DEMO_TOO_LONG = "demo-1m-context"  # refused before anything stops: past the model's maximum
DEMO_PROFILE = {
    "2x3090-nvlink": "qwen36-27b-awq-tp2",
    "2x3090-gen3-x8": "qwen36-27b-awq-tp2",
    "2x4090-pcie": "qwen36-27b-4090-tp2-mtp",
    "1x3090": "qwen36-27b-1x3090",
}


def register(sub: common.Subparsers) -> None:
    parser = common.add_command(sub, "demo")
    parser.add_argument("--profile", help="the profile to start with (default: one made for the rig)")
    parser.add_argument("--no-load", action="store_true", help="no synthetic requests")
    parser.set_defaults(handler=run_demo)


def terminal_problem(term: str | None, is_tty: bool) -> str | None:
    """Why this terminal cannot draw the TUI, or None. Textual on a dumb terminal or a pipe prints
    escape codes nobody reads (or hangs waiting for a size), so it is refused before anything starts."""
    if not is_tty:
        return "standard output is not a terminal"
    if not term or term == "dumb":
        return f"TERM={term or '(unset)'} is a terminal the TUI cannot draw on"
    return None


def refuse_dumb_terminal() -> None:
    import sys

    from rigctl.errors import RigctlError

    problem = terminal_problem(os.environ.get("TERM"), sys.stdout.isatty())
    if problem:
        raise RigctlError(f"{problem}: `rigctl status` and `rigctl gpus --watch` show the rig as text")


def run_tui(args: argparse.Namespace, initial: str | None = None) -> int:
    from functools import partial

    from rigctl.cli.context import make_context
    from rigctl.config import load_settings

    refuse_dumb_terminal()
    from rigctl.tui.app import make_app  # Textual is only imported here

    settings = load_settings()
    # the TUI header shows the host's figures too; no driver is the one-line error, here
    sampler = common.open_sampler(args, with_host=True)
    try:
        # the serving context (launcher, profiles, option tables) is made after the first frame
        serve = partial(make_context, args, sampler=sampler, settings=settings)
        make_app(sampler, serve, settings=settings, poll_interval=settings.rig_interval, initial_switch=initial, record=True).run()
    finally:
        sampler.close()
    return 0


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare_demo_home(rig: str, profile: str | None = None) -> tuple[Path, str]:
    """A throw-away state and config dir for a demo (set in this process's environment), the
    shipped profiles moved to a free port, and one profile that cannot fit. Returns the dir
    and the profile to start with."""
    home = Path(tempfile.mkdtemp(prefix="rigctl-demo-"))
    os.environ["RIGCTL_STATE_DIR"] = str(home / "state")
    os.environ["RIGCTL_CONFIG_DIR"] = str(home / "config")
    os.environ["RIGCTL_SIM"] = rig
    os.environ.setdefault("RIGCTL_SIM_TIME_SCALE", "0.05")
    port = _free_port()
    user = home / "config" / "profiles"
    user.mkdir(parents=True)
    # The shipped profiles serve on 8000; the demo moves them to a free port by customising
    # the shipped bases under their own names (how a user would do it too).
    for base in ("qwen36-27b-base", "qwen25-3b-dp2"):
        (user / f"{base}.toml").write_text(
            f'# demo: the shipped {base} on a free port\nextends = "{base}"\n\n[vllm]\nport = {port}\n'
        )
    made_for_rig = DEMO_PROFILE.get(rig, "qwen36-27b-awq-tp2")
    # One profile whose boot dies, so a newcomer can see a failed switch explained and rolled back,
    # and one that asks for more than the model allows, refused while the running server serves on.
    (user / f"{DEMO_FAILS}.toml").write_text(
        "# demo: the simulated engine crashes while it loads the weights, as a driver fault does\n"
        'description = "demo: crashes while loading: switch to it to see a rollback"\n'
        f'extends = "{made_for_rig}"\n\n[env]\nRIGCTL_SIM_CRASH_AT = "load"\n'
    )
    (user / f"{DEMO_TOO_LONG}.toml").write_text(
        "# demo: asks for a 1M-token context, four times what the model allows: refused before the stop\n"
        'description = "demo: 1M context: switch to it to see it refused before anything stops"\n'
        f'extends = "{made_for_rig}"\n\n[vllm]\nmax_model_len = 1048576\n'
    )
    return home, profile or made_for_rig


def run_demo(args: argparse.Namespace) -> int:
    from rigctl.backends import selected_sim

    refuse_dumb_terminal()  # before a simulator is started for a TUI that cannot be drawn
    rig = selected_sim(getattr(args, "sim", None)) or DEMO_RIG
    args.sim = rig
    home, first = prepare_demo_home(rig, args.profile)
    load = None
    if not args.no_load:
        from rigctl.jsonio import DamagedFile
        from rigctl.sim.loadgen import LoadGenerator
        from rigctl.state.statefiles import read_record

        def endpoint() -> tuple[str, str] | None:
            try:
                record = read_record()
            except DamagedFile:
                return None
            return (record.base_url, record.served_names[0]) if record else None

        load = LoadGenerator(endpoint)
        load.start()
    try:
        return run_tui(args, initial=first)
    finally:
        if load:
            load.stop()
        from rigctl.cli.context import make_context
        from rigctl.serve import switch as transaction

        transaction.stop(make_context(args))
        shutil.rmtree(home, ignore_errors=True)
