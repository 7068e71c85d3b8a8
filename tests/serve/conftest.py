"""A serving test harness: the real simulator process on a free port, real files, real locks."""

from __future__ import annotations

import argparse
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigctl.cli.serving import make_context
from rigctl.serve import switch as transaction
from rigctl.serve.bootwatch import Event
from rigctl.serve.control import ServeContext

RIG = "2x3090-nvlink"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def profiles(isolated_dirs: Path, port: int) -> Path:
    """User profiles on a test port: `good` (AWQ TP=2), `alt` (FP8 TP=2)."""
    user = isolated_dirs / "config" / "rigctl" / "profiles"
    user.mkdir(parents=True)
    for name, parent in (("good", "qwen36-27b-awq-tp2"), ("alt", "qwen36-27b-fp8-tp2")):
        (user / f"{name}.toml").write_text(f'extends = "{parent}"\n[vllm]\nport = {port}\n')
    return user


def add_profile(user: Path, name: str, body: str, port: int, parent: str = "qwen36-27b-awq-tp2") -> None:
    (user / f"{name}.toml").write_text(f'extends = "{parent}"\n[vllm]\nport = {port}\n{body}')


@pytest.fixture
def ctx(monkeypatch: pytest.MonkeyPatch, profiles: Path) -> Iterator[ServeContext]:
    monkeypatch.setenv("RIGCTL_SIM", RIG)
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    events: list[Event] = []
    context = make_context(argparse.Namespace(sim=RIG), events.append)
    context.events = events  # type: ignore[attr-defined]
    yield context
    transaction.stop(context)  # never leave a simulator running after a test
    if context.sampler:
        context.sampler.close()
