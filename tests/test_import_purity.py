"""The core and every headless command never import Textual (checked in fresh processes):
scripts and cron jobs pay for neither Textual's import time nor its memory."""

from __future__ import annotations

import argparse
import pkgutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

import rigctl
from rigctl.cli import build_parser

FIXTURES = Path(__file__).parent / "fixtures" / "vllm"
UI_PACKAGES = ("rigctl.tui",)
TUI_COMMANDS = {"demo"}  # and bare `rigctl`

# Every headless subcommand, run as a script would, in the order a session goes. Each entry
# is (argv, expected exit code).
HEADLESS: list[tuple[list[str], int]] = [
    (["sims"], 0),
    (["status", "--json"], 0),
    (["topo"], 0),
    (["gpus"], 0),
    (["config", "--json"], 0),
    (["profile", "list"], 0),
    (["profile", "show", "good"], 0),
    (["profile", "diff", "good", "alt"], 0),
    (["profile", "validate", "good"], 0),
    (["profile", "argv", "good"], 0),
    (["profile", "new", "mine", "--from", "good"], 0),
    (["profile", "set", "mine", "vllm.max_num_seqs", "4"], 0),
    (["profile", "unset", "mine", "vllm.max_num_seqs"], 0),
    (["bootlog", str(FIXTURES / "bootlog_0.11.0_1.log")], 0),
    (["metrics", "--file", str(FIXTURES / "metrics_0.10.0_1.prom")], 0),
    (["switch", "good"], 0),
    (["metrics", "--json"], 0),
    (["logs", "-n", "5"], 0),
    (["history"], 0),
    (["bench", "list"], 0),
    (["report"], 0),
    (["record", "--interval", "0.1"], 2),  # refused before it runs: a recorder never ends by itself
    (["watch", "--interval", "0.1"], 2),
    (["exporter", "--once"], 0),  # one scrape: prometheus_client loaded, no UI
    (["rigs"], 2),  # no Prometheus configured: refused in one line
    (["gateway", "--status"], 1),  # no front door runs: said in one line
    # the door in front of one server: listens, forwards nothing, ends at its duration; no UI
    (
        [
            "capture",
            "--to",
            "http://127.0.0.1:9",
            "--listen",
            "127.0.0.1:0",
            "--duration",
            "0.2",
            "--out",
            str(Path(tempfile.gettempdir()) / f"rigctl-purity-{uuid.uuid4().hex}.jsonl"),
        ],
        0,
    ),
    (["fit", "--config", str(FIXTURES.parent / "fit/tiny-qwen2.config.json"), "--max-model-len", "2048"], 0),
    (["adopt", "mine", "--pid", "999999999"], 2),  # no such process: refused in one line
    (["restart"], 0),
    (["stop"], 0),
    (["start"], 0),
    (["stop"], 0),
]


def ui_modules(names: str) -> list[str]:
    return [m for m in names.split() if m.split(".")[0] in ("textual", "rich")]


def core_modules() -> list[str]:
    return sorted(
        m.name
        for m in pkgutil.walk_packages(rigctl.__path__, "rigctl.")
        if not m.name.startswith(UI_PACKAGES) and m.name != "rigctl.__main__"
    )


def subcommands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def test_every_core_module_imports_no_textual() -> None:
    modules = core_modules()
    assert "rigctl.alerts" in modules and "rigctl.sim.vllm_server" in modules and len(modules) > 60
    probe = f"import importlib, sys\nfor m in {modules!r}: importlib.import_module(m)\nprint(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert ui_modules(out.stdout) == []


def test_the_list_covers_every_headless_subcommand() -> None:
    covered = {argv[0] for argv, _ in HEADLESS}
    assert subcommands(build_parser()) - TUI_COMMANDS == covered


def test_every_headless_command_imports_no_textual(profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCTL_SIM", "2x3090-nvlink")
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    # One process runs the whole session; after each command it names any UI module now loaded.
    code = (
        "import contextlib, io, sys\nfrom rigctl.cli import main\n"
        f"for argv, expected in {HEADLESS!r}:\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):\n"
        "        code = main(argv)\n"
        "    loaded = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]\n"
        "    print(' '.join(argv[:2]), code, expected, ','.join(loaded) or '-')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(HEADLESS)
    for line in lines:
        *command, code_, expected, loaded = line.split()
        assert code_ == expected, f"{' '.join(command)} exited {code_}"
        assert loaded == "-", f"{' '.join(command)} loaded {loaded}"


def test_status_loads_no_event_loop(profiles: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`rigctl status` asks the front door over its socket; the door's own asyncio machinery (the
    hold, the control server) stays in the door's process (gateway/control_server.py, apps_seen.py)."""
    monkeypatch.setenv("RIGCTL_SIM", "2x3090-nvlink")
    # a door's socket path that answers nothing: status asks over it, with the door's client only
    from rigctl import paths

    paths.ensure_private_dir(paths.state_dir())
    paths.gateway_socket().touch()
    code = (
        "import contextlib, io, sys\nfrom rigctl.cli import main\nout = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n    code = main(['status', '--json'])\n"
        "print(code, sorted(m for m in sys.modules if m == 'asyncio' or m.startswith('rigctl.gateway')))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(None, 1)[0] == "0", result.stdout
    assert "'asyncio'" not in result.stdout and "rigctl.gateway.control'" in result.stdout, result.stdout
