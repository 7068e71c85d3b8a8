from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.watch.harness import WatchRig


@pytest.fixture
def watch_rig(monkeypatch: pytest.MonkeyPatch, isolated_dirs: Path, profiles: Path, port: int) -> Iterator[WatchRig]:
    monkeypatch.setenv("RIGCTL_SIM", "2x3090-nvlink")
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    rig = WatchRig(isolated_dirs, dict(os.environ), profiles, port)
    yield rig
    rig.cleanup()
    subprocess.run([sys.executable, "-m", "rigctl", "stop", "--no-drain"], env=rig.env, capture_output=True, timeout=60)
