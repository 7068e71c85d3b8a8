from __future__ import annotations

from pathlib import Path

import pytest

from rigctl.gpu.model import RigInfo
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.vllm_version import OptionTables
from rigctl.sim.rigspec import load_rig
from rigctl.vllm.options import OptionTable, load_option_table

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.fixture
def table() -> OptionTable:
    return load_option_table()


@pytest.fixture
def tables() -> OptionTables:
    """As the CLI builds them on a machine whose `vllm` is not on PATH: the newest table."""
    return OptionTables(("vllm",))


@pytest.fixture
def user_dir(isolated_dirs: Path) -> Path:
    path = isolated_dirs / "config" / "rigctl" / "profiles"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def store(user_dir: Path) -> ProfileStore:
    return ProfileStore()


def rig(name: str) -> RigInfo:
    target = str(FIXTURES / f"{name}.toml") if (FIXTURES / f"{name}.toml").exists() else name
    return load_rig(target).to_info(f"sim:{name}")


def write(user_dir: Path, name: str, text: str) -> Path:
    path = user_dir / f"{name}.toml"
    path.write_text(text)
    return path
