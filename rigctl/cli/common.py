"""Flags and helpers every subcommand shares."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rigctl.rules import Rule

from rigctl import jsonio
from rigctl.backends import open_backend, selected_sim
from rigctl.cli.commands import help_of
from rigctl.errors import NoDriverError

if TYPE_CHECKING:  # what argparse hands each command module to register its parser in (generic only in typeshed)
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

if TYPE_CHECKING:  # the modules behind these are imported by the commands that use them
    from rigctl.config import Settings
    from rigctl.gpu.model import RigInfo
    from rigctl.gpu.sampler import RigSampler
    from rigctl.profiles.vllm_version import OptionTables


def add_global_flags(parser: argparse.ArgumentParser, top_level: bool = False) -> None:
    # Subcommands get the flag too, so `rigctl topo --sim X` works; SUPPRESS keeps a
    # subcommand's missing flag from overwriting one given before the subcommand.
    default = None if top_level else argparse.SUPPRESS
    parser.add_argument(
        "--sim",
        metavar="NAME",
        default=default,
        help="use a simulated rig instead of NVML (also RIGCTL_SIM; `rigctl sims` lists them)",
    )
    if top_level:  # before the command only: `rigctl exporter --rig NAME` is the exporter's label
        parser.add_argument(
            "--rig",
            dest="remote_rig",  # its own name: the exporter's --rig (a label) lands on args.rig
            metavar="NAME",
            help='run the command on rig NAME over SSH ([rigs.NAME] ssh = "user@host" in config.toml)',
        )


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def add_command(sub: Subparsers, name: str, help_text: str | None = None) -> argparse.ArgumentParser:
    """A subcommand's parser; a top-level command's help comes from cli/commands.py."""
    help_text = help_text or help_of(name)
    parser = sub.add_parser(name, help=help_text, description=help_text)
    add_global_flags(parser)
    return parser


def open_sampler(args: argparse.Namespace, with_host: bool = True) -> RigSampler:
    from rigctl.gpu.sampler import RigSampler

    return RigSampler(open_backend(selected_sim(getattr(args, "sim", None))), with_host=with_host)


def serves_without_a_driver(settings: Settings) -> bool:
    """A launcher or a vLLM command was configured: a box serving the CPU build of vLLM, where
    no NVIDIA driver is no reason to refuse."""
    return {settings.sources.get(k, "default") for k in ("launcher", "vllm_command")} != {"default"}


def option_tables(args: argparse.Namespace, cached_only: bool = False) -> OptionTables:
    """The tables profiles are checked against: those of the vLLM the configured command runs
    (the simulator's with --sim), or a profile's own `[rigctl] vllm_command`."""
    from rigctl.config import load_settings
    from rigctl.profiles.vllm_version import OptionTables
    from rigctl.serve.launchers import SIM_COMMAND

    command = SIM_COMMAND if selected_sim(getattr(args, "sim", None)) else load_settings().vllm_command
    return OptionTables(command, cached_only=cached_only)


def print_json(value: object) -> None:
    """Strict JSON: a NaN or an infinity prints as null, never as a bare NaN jq rejects."""
    sys.stdout.write(jsonio.dumps(value, indent=2) + "\n")


def rig_info_or_none(args: argparse.Namespace, quiet: bool = False) -> RigInfo | None:
    """The rig's static facts for checks against it; None (with a note) when none is known."""
    try:
        backend = open_backend(selected_sim(getattr(args, "sim", None)))
    except NoDriverError:
        if not quiet:
            print("note: no NVIDIA driver and no --sim: checks against the rig are skipped", file=sys.stderr)
        return None
    try:
        return backend.info()
    finally:
        backend.close()


def served_endpoint(url: str | None, flag: str = "--url") -> tuple[str, str | None, int | None]:
    """(base URL, API key, its pid when rigctl started it) of the server to talk to: the one given,
    [server] endpoint, or the one rigctl started (RigctlError when there is none)."""
    from rigctl.config import load_settings
    from rigctl.errors import RigctlError
    from rigctl.state.serving import find_running

    if url:
        return url, None, None
    settings = load_settings()
    if settings.endpoint:
        return settings.endpoint, None, None
    running = find_running(settings)
    for note in running.notes:
        print(f"rigctl: {note}", file=sys.stderr)
    if running.record is None or running.view is None:
        raise RigctlError(f"no server to ask: rigctl has not started one here (give {flag}, or set [server] endpoint)")
    return running.record.base_url, running.view.api_key(running.record), running.record.pid


def check_flags(args: argparse.Namespace, rules: dict[str, Rule]) -> None:
    """Each flag given (not None) by its rule (rigctl/rules.py, the one a config key of the same
    meaning takes): `--tp: must be a whole number of GPUs of at least 1, not 0`."""
    from rigctl.errors import BadInputError
    from rigctl.rules import RuleError, complaint

    for name, rule in rules.items():
        value = getattr(args, name)
        if value is None:
            continue
        try:
            setattr(args, name, rule.parse(value))
        except RuleError as exc:
            raise BadInputError(f"--{name.replace('_', '-')}: {complaint(exc, value)}") from None
