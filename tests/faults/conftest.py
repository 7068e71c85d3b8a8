"""Each fault case gets its own rig: XDG dirs, port, profiles `good` and `alt`; stopped after."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.rig import Rig


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    harness = Rig(tmp_path / "home")
    yield harness
    harness.cleanup()
