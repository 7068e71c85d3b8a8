"""A serve context on the simulated 2x3090 rig with the test profiles, for switching tests."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigctl.cli.serving import make_context
from rigctl.serve import switch as transaction
from rigctl.serve.control import ServeContext


@pytest.fixture
def tui_ctx(monkeypatch: pytest.MonkeyPatch, profiles: Path) -> Iterator[ServeContext]:
    monkeypatch.setenv("RIGCTL_SIM", "2x3090-nvlink")
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    ctx = make_context(argparse.Namespace(sim="2x3090-nvlink"))
    yield ctx
    transaction.stop(ctx)
