"""The serving context a command runs with (rigctl/serve/context.py), made from its arguments: a
module of its own so that the TUI, which needs a context at its start and the switch only when
asked, does not load the transaction with it."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from rigctl.backends import open_backend, selected_sim
from rigctl.cli import common
from rigctl.config import load_settings
from rigctl.errors import NoDriverError, RigctlError
from rigctl.gpu.sampler import RigSampler
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.vllm_version import OptionTables
from rigctl.serve.context import Event, ServeContext
from rigctl.serve.launchers import SIM_COMMAND, make_launcher


def make_context(
    args: argparse.Namespace, on_event: Callable[[Event], None] | None = None, with_host: bool = False
) -> ServeContext:
    """The serving context of a command: its settings, launcher, profiles, option tables and rig.
    `with_host`: its sampler reads the host's CPU and memory too (the TUI's header)."""
    settings = load_settings()
    sim = selected_sim(getattr(args, "sim", None))
    try:
        sampler: RigSampler | None = RigSampler(open_backend(sim), with_host=with_host)
    except NoDriverError as exc:
        if not common.serves_without_a_driver(settings):
            raise RigctlError(
                f"{exc}; or, to serve without an NVIDIA driver (a CPU build of vLLM), set [server] "
                "vllm_command (or launcher) in config.toml"
            ) from exc
        sampler = None
    return ServeContext(
        settings=settings,
        launcher=make_launcher(settings, "process" if sim else None, sim),
        store=ProfileStore(),
        tables=OptionTables(SIM_COMMAND if sim else settings.vllm_command),
        rig=sampler.info if sampler else None,
        sampler=sampler,
        on_event=on_event or (lambda event: None),
    )
