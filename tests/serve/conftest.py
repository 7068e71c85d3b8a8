"""A serving test harness: the real simulator process on a free port, real files, real locks."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigctl.cli.context import make_context
from rigctl.serve import switch as transaction
from rigctl.serve.context import Event, ServeContext

RIG = "2x3090-nvlink"


@pytest.fixture
def events() -> list[Event]:
    """What the switches of the test's `ctx` said, in order."""
    return []


@pytest.fixture
def ctx(monkeypatch: pytest.MonkeyPatch, profiles: Path, events: list[Event]) -> Iterator[ServeContext]:
    monkeypatch.setenv("RIGCTL_SIM", RIG)
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    context = make_context(argparse.Namespace(sim=RIG), events.append)
    yield context
    transaction.stop(context)  # never leave a simulator running after a test
    if context.sampler:
        context.sampler.close()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, profiles: Path) -> Iterator[dict[str, str]]:
    """The environment of rigctl run as a command on the simulated 2x3090 (anything left serving is
    stopped after the test)."""
    monkeypatch.setenv("RIGCTL_SIM", RIG)
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    environment = dict(os.environ)
    yield environment
    subprocess.run([sys.executable, "-m", "rigctl", "stop", "--no-drain"], env=environment, capture_output=True, timeout=60)
