"""A remote rig (a simulated 2x3090 with its own XDG dirs) behind a real sshd on 127.0.0.1, and a
local rigctl whose config.toml names it `[rigs.box2]`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults.rig import Rig
from tests.support.sshd import Sshd, remote_rigctl

REMOTE_ENV = ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "RIGCTL_SIM", "RIGCTL_SIM_TIME_SCALE", "PYTHONUNBUFFERED")


@dataclass
class Link:
    here: Rig  # this terminal: its own XDG dirs, [rigs.box2] in its config.toml
    there: Rig  # the rig reached over SSH
    sshd: Sshd

    def name_rig(self, *, client_config: Path | None = None, rigctl: str | None = None) -> None:
        self.here.write_config(self.rig_table(client_config=client_config, rigctl=rigctl))

    def rig_table(self, *, client_config: Path | None = None, rigctl: str | None = None) -> str:
        """config.toml's [rigs.box2], reaching the rig through this sshd."""
        options = json.dumps(["-F", str(client_config or self.sshd.client_config)])
        path = json.dumps(rigctl or remote_rigctl())
        return f'[rigs.box2]\nssh = "box2"\nrigctl = {path}\nssh_options = {options}\n'


@pytest.fixture
def link(tmp_path: Path) -> Iterator[Link]:
    there = Rig(tmp_path / "there")
    sshd = Sshd(tmp_path / "sshd", {k: there.env[k] for k in REMOTE_ENV})
    here = Rig(tmp_path / "here")
    link = Link(here, there, sshd)
    link.name_rig()
    try:
        yield link
    finally:
        there.cleanup()
        sshd.close()
