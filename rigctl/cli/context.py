"""The serving context a command runs with (rigctl/serve/context.py), made from its arguments: a
module of its own so that the TUI, which needs a context at its start and the switch only when
asked, does not load the transaction with it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from rigctl.backends import selected_sim
from rigctl.cli import common
from rigctl.config import Settings, load_settings
from rigctl.errors import NoDriverError, RigctlError
from rigctl.serve.context import Event, ServeContext

if TYPE_CHECKING:
    from rigctl.gpu.sampler import RigSampler


def make_context(
    args: argparse.Namespace,
    on_event: Callable[[Event], None] | None = None,
    with_host: bool = False,
    sampler: RigSampler | None = None,
    settings: Settings | None = None,
) -> ServeContext:
    """The serving context of a command: its settings, launcher, profiles, option tables and rig.
    `with_host`: its sampler reads the host's CPU and memory too (the TUI's header). `sampler` and
    `settings`: already opened and read (the TUI's, which draws its first frame before this)."""
    # imported here, not above: the TUI makes its context after its first frame (docs/guide/costs.md)
    from rigctl.profiles.store import ProfileStore
    from rigctl.profiles.vllm_version import OptionTables
    from rigctl.serve.launchers import SIM_COMMAND, make_launcher

    settings = settings or load_settings()
    sim = selected_sim(getattr(args, "sim", None))
    if sampler is None:
        try:
            sampler = common.open_sampler(args, with_host)
        except NoDriverError as exc:
            if not common.serves_without_a_driver(settings):
                raise RigctlError(
                    f"{exc}; or, to serve without an NVIDIA driver (a CPU build of vLLM), set [server] "
                    "vllm_command (or launcher) in config.toml"
                ) from exc
    return ServeContext(
        settings=settings,
        launcher=make_launcher(settings, "process" if sim else None, sim),
        store=ProfileStore(),
        tables=OptionTables(SIM_COMMAND if sim else settings.vllm_command),
        rig=sampler.info if sampler else None,
        sampler=sampler,
        on_event=on_event or (lambda event: None),
    )
