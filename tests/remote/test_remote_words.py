"""What `rigctl --rig` sends: every argument reaches the rig's rigctl as the same word, through a
real login shell (bash and dash, as sshd would hand them the command line), whatever it holds."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rigctl import __version__
from rigctl.cli.remote import remote_words
from rigctl.remote.ssh import MARK, ssh_argv
from rigctl.rig_table import RemoteRig

WORDS = st.lists(st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), max_size=12), max_size=5)


def test_only_the_first_rig_flag_is_ours() -> None:
    assert remote_words(["--rig", "box2", "exporter", "--once", "--rig", "alpha"]) == ["exporter", "--once", "--rig", "alpha"]
    assert remote_words(["--rig=box2", "status", "--json"]) == ["status", "--json"]


@pytest.fixture(scope="module")
def echo_rigctl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stand-in for the rig's rigctl that prints back the words it was given, NUL-separated."""
    path = tmp_path_factory.mktemp("rig") / "rigctl"
    path.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "rigctl {__version__}"; exit 0; fi\nprintf "%s\\0" "$@"\n')
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("shell", ["bash", "dash"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=WORDS)
def test_every_word_arrives_whole(echo_rigctl: Path, shell: str, words: list[str]) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} here")
    command = ssh_argv(RemoteRig(name="box2", ssh="box2", rigctl=str(echo_rigctl)), ["status", *words])[-1]
    done = subprocess.run([shell, "-c", command], capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(b"\0")[:-1] == [w.encode() for w in ["status", *words]]
    assert done.stderr.decode() == MARK + "ok\n"


def test_a_home_relative_rigctl_is_found_in_that_users_home(tmp_path: Path, echo_rigctl: Path) -> None:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    shutil.copy(echo_rigctl, home / "bin" / "rigctl")
    command = ssh_argv(RemoteRig(name="box2", ssh="box2", rigctl="~/bin/rigctl"), ["gpus"])[-1]
    done = subprocess.run(["sh", "-c", command], capture_output=True, timeout=30, env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert done.stdout == b"gpus\0", done.stderr
