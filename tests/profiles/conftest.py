from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


def fake_vllm(tmp_path: Path) -> Path:
    """A `vllm` that answers --version as vLLM does (the import checks the profile against the vLLM
    it names) and otherwise sleeps: a process whose /proc reads as vLLM's."""
    fake = tmp_path / "bin" / "vllm"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(
        f"#!{sys.executable}\nimport sys, time\nif '--version' in sys.argv:\n    print('0.33.0')\nelse:\n    time.sleep(60)\n"
    )
    fake.chmod(0o755)
    return fake


@contextmanager
def running_vllm(tmp_path: Path, argv: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """fake_vllm running `argv` in `env`, once its /proc cmdline shows it; killed after."""
    child = subprocess.Popen([str(fake_vllm(tmp_path)), *argv], env=env)
    try:
        deadline = time.monotonic() + 30
        while b"serve" not in Path(f"/proc/{child.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)
        yield child
    finally:
        child.kill()
        child.wait()
