"""Every test runs with its own config and state dirs and no simulated rig preselected; nothing a
test started outlives the session, and a session killed before its end is cleaned up after by the
next one (tests/support/leaks.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from rigctl.serve.context import ServeContext
from tests.support import leaks


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller, once: before any worker starts anything
        for line in leaks.reap_orphans():
            print(f"killed, left running by an earlier test run that was killed: {line}", file=sys.stderr)
    leaks.mark_this_session()  # in each xdist worker: its own token for what its tests start


# A test skipped for want of one of these is a real-part test: with RIGCTL_REAL_PARTS_REQUIRED=1
# (.ci/run) its skip is a failure, so "tested against a real Prometheus / sshd / LiteLLM" holds
# of every CI run, never only of the runs whose machine happened to have them.
REAL_PART_SKIPS = ("apt-get install", "scripts/setup_litellm.sh", "OpenSSH server")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.skipped and os.environ.get("RIGCTL_REAL_PARTS_REQUIRED") == "1":
        reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
        if any(part in reason for part in REAL_PART_SKIPS):
            report.outcome = "failed"
            report.longrepr = f"a real part this test runs against is missing, and this run requires them: {reason}"
    return report


@pytest.fixture(scope="session", autouse=True)
def nothing_outlives_the_session() -> Iterator[None]:
    yield
    left = leaks.reap_leftovers(os.environ[leaks.TOKEN_VAR], grace_s=15)
    assert not left, "still running after the session (killed now): " + "; ".join(left)


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_STATE_HOME", "state"), ("XDG_CACHE_HOME", "cache")):
        path = home / sub
        path.mkdir(parents=True)
        monkeypatch.setenv(var, str(path))
    for var in (
        "RIGCTL_SIM",
        "RIGCTL_STATE_DIR",
        "RIGCTL_CONFIG_DIR",
        "RIGCTL_CONFIG",
        "RIGCTL_THEME",
        "RIGCTL_PROFILES_DIR",
        "RIGCTL_LAUNCHER",
        "RIGCTL_VLLM_COMMAND",
        "RIGCTL_ENDPOINT",
        "RIGCTL_BOOT_TIMEOUT",
        "CUDA_DEVICE_ORDER",
        "NO_COLOR",
        "HF_HOME",
        "HF_HUB_CACHE",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def port() -> int:
    from tests.support.serving import free_port

    return free_port()


@pytest.fixture
def profiles(isolated_dirs: Path, port: int) -> Path:
    """User profiles on a test port: `good` (AWQ TP=2), `alt` (FP8 TP=2)."""
    from tests.support.serving import add_profile

    user = isolated_dirs / "config" / "rigctl" / "profiles"
    user.mkdir(parents=True)
    add_profile(user, "good", "", port)
    add_profile(user, "alt", "", port, parent="qwen36-27b-fp8-tp2")
    return user


@pytest.fixture
def serve_ctx(monkeypatch: pytest.MonkeyPatch, profiles: Path) -> Iterator[ServeContext]:
    """A serve context on the simulated 2x3090 rig with the test profiles; stops what it started."""
    import argparse

    from rigctl.cli.context import make_context
    from rigctl.serve import switch as transaction

    monkeypatch.setenv("RIGCTL_SIM", "2x3090-nvlink")
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    ctx = make_context(argparse.Namespace(sim="2x3090-nvlink"))
    yield ctx
    transaction.stop(ctx)


@pytest.fixture
def sim_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of a fast simulated 2x3090 for a simulator started as a process."""
    monkeypatch.setenv("RIGCTL_SIM", "2x3090-nvlink")
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    monkeypatch.setenv("RIGCTL_SIM_SPEED", "20")
    return dict(os.environ)
