"""Every command with --json prints one JSON document on stdout, and nothing else, for every
outcome: a success, a refusal, a failure, a usage error. A script parses it without looking at the
exit code first; a non-zero exit is an object that says its code too. (A listing's success is a
JSON array: `sims`, `profile list`, `history`.) The commands are walked from the parser,
so a new one is held to it the day it is added."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rigctl.cli import build_parser


def json_commands() -> list[tuple[list[str], list[str]]]:
    """(the command's words, its required positionals) for every (sub)command that takes --json."""
    found: list[tuple[list[str], list[str]]] = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        actions = parser._actions
        if any("--json" in a.option_strings for a in actions):
            required = [
                a.dest
                for a in actions
                if not a.option_strings and not isinstance(a, argparse._SubParsersAction) and a.nargs not in ("?", "*")
            ]
            found.append((path, required))
        for sub in (a for a in actions if isinstance(a, argparse._SubParsersAction)):
            for name, child in sub.choices.items():
                walk(child, [*path, name])

    walk(build_parser(None), [])
    return found


COMMANDS = json_commands()
FILLERS = {"file": "/nonexistent/vllm.log", "name": "no-such-profile", "a": "no-such-profile", "b": "good"}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rigctl", *args], env=env, capture_output=True, text=True, timeout=120)


def one_document(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    text = done.stdout
    assert text.strip(), f"nothing on stdout (exit {done.returncode}); stderr: {done.stderr[-500:]}"
    try:
        value = json.loads(text)  # the whole of stdout: one object, nothing before or after it
    except ValueError as exc:
        raise AssertionError(f"stdout is not one JSON object ({exc}): {text[:500]!r}") from None
    if done.returncode == 0 and isinstance(value, list):
        return {}
    assert isinstance(value, dict), value
    if done.returncode != 0:
        assert value.get("exit_code") == done.returncode, (done.returncode, value)
    return value


@pytest.fixture
def env(profiles: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("RIGCTL_SIM", "2x3090-nvlink")
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    return dict(os.environ)


def test_the_walk_finds_the_commands_scripts_use() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"status", "switch", "stop", "bench", "report", "profile show", "config"} <= names


@pytest.mark.parametrize(("path", "required"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_a_usage_error_and_a_refusal_are_one_json_object(env: dict[str, str], path: list[str], required: list[str]) -> None:
    bad = run(env, *path, *(FILLERS.get(r, "x") for r in required), "--json", "--no-such-flag")
    assert bad.returncode == 2 and one_document(bad)["exit_code"] == 2
    # as it comes, on a rig where nothing serves and the named things do not exist
    done = run(env, *path, *(FILLERS.get(r, "x") for r in required), "--json")
    answer = one_document(done)
    if done.returncode != 0:
        assert answer.get("error") or answer.get("message") or answer.get("reason"), answer
    run(env, "stop", "--no-drain")  # a start that worked leaves nothing behind
