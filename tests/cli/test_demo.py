"""The demo's promise: a newcomer switches to the profile whose boot dies and sees the rollback
explained, and to the one past the model's maximum and sees it refused before anything stops, on
the simulated rig, with the shipped profiles moved to a free port."""

from __future__ import annotations

import argparse
import shutil

import pytest

from rigctl.cli.context import make_context
from rigctl.cli.tui import DEMO_FAILS, DEMO_TOO_LONG, prepare_demo_home
from rigctl.errors import ExitCode
from rigctl.profiles.schema import ProfileError
from rigctl.serve import switch as transaction
from rigctl.state.statefiles import read_record


def test_demo_profiles_switch_and_roll_back(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("RIGCTL_STATE_DIR", "RIGCTL_CONFIG_DIR", "RIGCTL_SIM"):  # restored after the test
        monkeypatch.setenv(var, "unset")
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    home, first = prepare_demo_home("2x3090-nvlink")
    ctx = make_context(argparse.Namespace(sim="2x3090-nvlink"))
    try:
        assert first == "qwen36-27b-awq-tp2"
        assert transaction.switch(ctx, first).status == "switched"
        pid = read_record().pid  # type: ignore[union-attr]
        with pytest.raises(ProfileError, match="1,048,576 is more than the model allows"):
            transaction.switch(ctx, DEMO_TOO_LONG)  # refused: nothing stopped
        assert read_record().pid == pid  # type: ignore[union-attr]
        outcome = transaction.switch(ctx, DEMO_FAILS)
        assert outcome.status == "rolled_back" and outcome.exit_code == ExitCode.ROLLED_BACK
        assert "the engine process crashed" in outcome.message and f"{first} serves again" in outcome.message
    finally:
        transaction.stop(ctx)
        shutil.rmtree(home, ignore_errors=True)
