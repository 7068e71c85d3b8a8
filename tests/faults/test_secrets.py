"""Security: a secret planted in a profile reaches no output. Every subcommand's output, the
TUI's screens, rigctl's own files and the process list are searched for it."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import psutil
import pytest

from tests.faults.rig import Rig

KEYS = ("sk-planted-one", "sk-planted-two")
HF = "-hf-planted-dash"  # a value that starts with a dash, as some tokens do
OTHER = "tok-planted-env"
SECRETS = (*KEYS, HF, OTHER)
BODY = f'api_key = ["{KEYS[0]}", "{KEYS[1]}"]\nhf_token = "{HF}"\n[env]\nMY_SERVICE_TOKEN = "{OTHER}"\n'


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


@pytest.fixture
def planted(rig: Rig) -> Rig:
    rig.add_profile("secret", BODY)
    switched = rig.rigctl("switch", "secret", "-v")  # -v: vLLM's own log lines, its args dump among them
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert "non-default args" in switched.stdout and not _leaks(switched.stdout + switched.stderr)
    return rig


COMMANDS = [
    ("status",),
    ("status", "--json"),
    ("gpus",),
    ("gpus", "--json"),
    ("topo",),
    ("profile", "list"),
    ("profile", "list", "--json"),
    ("profile", "show", "secret"),
    ("profile", "show", "secret", "--json"),
    ("profile", "diff", "good", "secret"),
    ("profile", "diff", "good", "secret", "--json"),
    ("profile", "validate", "secret"),
    ("profile", "argv", "secret"),
    ("profile", "argv", "secret", "--json"),
    ("logs", "-n", "500"),
    ("history",),
    ("history", "--json"),
    ("metrics",),
    ("metrics", "--json"),
    ("config",),
    ("config", "--json"),
]


def test_no_subcommand_prints_a_planted_secret(planted: Rig) -> None:
    for command in COMMANDS:
        done = planted.rigctl(*command)
        assert done.returncode in (0, 2), (command, done.stderr)
        assert not _leaks(done.stdout + done.stderr), (command, _leaks(done.stdout + done.stderr))
    log = planted.record()["log_path"]
    for command in (("bootlog", log), ("bootlog", log, "--json")):
        done = planted.rigctl(*command)
        assert done.returncode == 0 and not _leaks(done.stdout + done.stderr), command


def test_the_key_is_not_in_the_process_list_nor_in_rigctls_files(planted: Rig) -> None:
    record = planted.record()
    server = psutil.Process(record["pid"])
    assert HF not in " ".join(server.cmdline()) and OTHER not in " ".join(server.cmdline())
    assert server.environ()["HF_TOKEN"] == HF  # passed through the environment instead
    for path in planted.state_dir.rglob("*"):
        if path.is_file() and path.suffix != ".log":  # the server's log is the server's own output
            assert not _leaks(path.read_text(errors="replace")), path


def test_profile_set_does_not_echo_a_secret_and_keeps_the_files_mode(rig: Rig) -> None:
    assert rig.rigctl("profile", "new", "mine", "--from", "good").returncode == 0
    path = rig.profiles / "mine.toml"
    path.chmod(0o644)
    done = rig.rigctl("profile", "set", "mine", "vllm.api_key", f'"{KEYS[0]}"')
    assert done.returncode == 0 and not _leaks(done.stdout + done.stderr)
    assert "mine: vllm.api_key = ***" in done.stdout
    assert "holds a secret and others can read it (mode 644): chmod 600" in done.stderr  # kept, and said
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    path.chmod(0o600)
    env = rig.rigctl("profile", "set", "mine", "env.HF_TOKEN", '"hf_x"')
    assert env.returncode == 0 and "hf_x" not in env.stdout + env.stderr and "chmod" not in env.stderr
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_extends_by_relative_path_reads_beside_the_file(rig: Rig, tmp_path: Path) -> None:
    shared = rig.profiles / "shared"
    shared.mkdir()
    (shared / "base.toml").write_text('extends = "qwen36-27b-awq-tp2"\n[vllm]\nmax_num_seqs = 64\n')
    (rig.profiles / "child.toml").write_text(f'extends = "shared/base.toml"\n[vllm]\nport = {rig.port}\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd in (rig.profiles, elsewhere):
        done = subprocess_in(rig, cwd, "profile", "show", "child", "--json")
        assert '"max_num_seqs": 64' in done


def subprocess_in(rig: Rig, cwd: Path, *args: str) -> str:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "rigctl", *args], env=rig.env, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_no_tui_screen_shows_a_planted_secret(planted: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in planted.env.items():
        monkeypatch.setenv(key, value)
    asyncio.run(_screens(planted))


async def _screens(rig: Rig) -> None:
    import argparse

    from rigctl.cli.context import make_context
    from tests.tui.helpers import app_for, poll, screen_text, settle

    ctx = make_context(argparse.Namespace(sim=os.environ["RIGCTL_SIM"]))
    app = app_for(ctx)
    shown = []
    async with app.run_test(size=(160, 48)) as pilot:
        await poll(app, pilot)
        await pilot.pause(0.5)
        await poll(app, pilot)
        for key in ("d", "l", "p", "h"):
            await pilot.press(key)
            await settle(app, pilot)
            await pilot.pause(0.6)
            shown.append(screen_text(app))
        await pilot.press("p")
        app.start_serving_action(
            "secret", lambda c: __import__("rigctl.serve.switch", fromlist=["switch"]).switch(c, "secret", rollback=False)
        )
        await settle(app, pilot)
        await pilot.pause(0.5)
        shown.append(screen_text(app))
    text = "\n".join(shown)
    assert "non-default args" in text or "Application startup" in text  # the log was on screen
    assert not _leaks(text), _leaks(text)
