"""Each front-door case gets its own rig (tests/support/door_rig.py), stopped after."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.door_rig import DoorRig


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[DoorRig]:
    harness = DoorRig(tmp_path / "home")
    yield harness
    harness.cleanup()
