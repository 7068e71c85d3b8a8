"""`rigctl --rig box2 ...` through a real sshd: the remote rig's answer and exit code come back
as they are; every way the command cannot run there is one line."""

from __future__ import annotations

import json

import psutil

from rigctl import __version__
from tests.faults.rig import Rig, crashed
from tests.remote.conftest import Link
from tests.support.serving import free_port
from tests.support.sshd import keygen


def test_status_json_is_the_rigs_own_answer(link: Link) -> None:
    assert link.there.rigctl("switch", "good").returncode == 0
    far = link.here.rigctl("--rig", "box2", "status", "--json")
    assert far.returncode == 0, far.stderr
    near = link.there.rigctl("status", "--json")
    got, want = json.loads(far.stdout), json.loads(near.stdout)
    assert got["serving"]["active_profile"] == want["serving"]["active_profile"] == "good"
    assert got["serving"]["server"]["pid"] == want["serving"]["server"]["pid"]
    assert [g["name"] for g in got["rig"]["gpus"]] == [g["name"] for g in want["rig"]["gpus"]]
    assert far.stderr == ""  # nothing of ssh's or the protocol's shows


def test_the_remote_exit_code_is_ours(link: Link) -> None:
    """status --check on a rig where nothing serves: 7 there, 7 here; a usage error there is 2 here."""
    far = link.here.rigctl("--rig", "box2", "status", "--check")
    assert far.returncode == 7, far.stdout + far.stderr
    assert far.returncode == link.there.rigctl("status", "--check").returncode
    missing = link.here.rigctl("--rig", "box2", "switch", "no-such-profile")
    assert missing.returncode == 2
    assert "no-such-profile" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


def test_arguments_reach_the_rig_as_words_never_as_shell(link: Link) -> None:
    """A profile name with quotes, a semicolon and $( ) is one argument there, refused as a name."""
    hostile = "x'; touch /tmp/rigctl-pwned-$(id -u); echo '"
    far = link.here.rigctl("--rig", "box2", "profile", "show", hostile)
    assert far.returncode == 2
    assert "rigctl-pwned" in far.stderr  # it came back as the name rigctl refused, whole
    near = link.there.rigctl("profile", "show", hostile)
    assert far.stderr == near.stderr


def test_an_unreachable_rig_is_one_line(link: Link) -> None:
    link.name_rig(client_config=link.sshd.write_client_config(link.sshd.known_hosts, port=free_port()))
    far = link.here.rigctl("--rig", "box2", "status")
    assert far.returncode == 1
    assert far.stderr.startswith("rigctl: rig box2 (box2) does not answer: ") and far.stderr.count("\n") == 1, far.stderr


def test_an_unknown_host_key_is_refused_in_one_line(link: Link) -> None:
    empty = link.sshd.home / "empty_known_hosts"
    empty.write_text("")
    link.name_rig(client_config=link.sshd.write_client_config(empty))
    far = link.here.rigctl("--rig", "box2", "status", "--json")
    assert far.returncode == 1
    assert "host key is not known here" in far.stderr and far.stderr.count("\n") == 1, far.stderr
    assert json.loads(far.stdout) == {"error": far.stderr.removeprefix("rigctl: ").strip(), "exit_code": 1}
    assert empty.read_text() == ""  # nothing accepted for the owner


def test_a_changed_host_key_is_refused_in_one_line(link: Link) -> None:
    other = keygen(link.sshd.home / "other_host_key")
    lying = link.sshd.home / "lying_known_hosts"
    lying.write_text(f"[127.0.0.1]:{link.sshd.port} {other}\n")
    link.name_rig(client_config=link.sshd.write_client_config(lying))
    far = link.here.rigctl("--rig", "box2", "status")
    assert far.returncode == 1
    assert "its host key CHANGED since it was known; rigctl will not connect" in far.stderr, far.stderr
    assert far.stderr.count("\n") == 1 and lying.read_text().count("\n") == 1


def test_a_key_the_rig_does_not_accept_is_one_line(link: Link) -> None:
    stranger = link.sshd.home / "stranger_key"
    keygen(stranger)
    link.name_rig(client_config=link.sshd.write_client_config(link.sshd.known_hosts, key=stranger))
    far = link.here.rigctl("--rig", "box2", "status")
    assert far.returncode == 1
    assert far.stderr.startswith("rigctl: rig box2 (box2) refused the login (") and far.stderr.count("\n") == 1, far.stderr


def test_a_missing_remote_rigctl_is_one_line(link: Link) -> None:
    link.name_rig(rigctl="/opt/nowhere/bin/rigctl")
    far = link.here.rigctl("--rig", "box2", "status")
    assert far.returncode == 1
    assert "no rigctl at '/opt/nowhere/bin/rigctl' there" in far.stderr and far.stderr.count("\n") == 1, far.stderr


def test_another_rigctl_version_runs_nothing(link: Link) -> None:
    """The rig's rigctl says another version: refused before the command runs there."""
    older = link.sshd.home / "old-rigctl"
    ran = link.sshd.home / "ran"
    older.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "rigctl 0.0.1"; exit 0; fi\ntouch {ran}\n')
    older.chmod(0o755)
    link.name_rig(rigctl=str(older))
    far = link.here.rigctl("--rig", "box2", "switch", "good")
    assert far.returncode == 1
    assert f"runs rigctl 0.0.1, this is rigctl {__version__}" in far.stderr and far.stderr.count("\n") == 1, far.stderr
    assert not ran.exists()


def test_an_unknown_rig_name_and_the_tui_are_refused_here(link: Link) -> None:
    unknown = link.here.rigctl("--rig", "box9", "status")
    assert unknown.returncode == 2 and "no rig 'box9'" in unknown.stderr and "rigs: box2" in unknown.stderr
    tui = link.here.rigctl("--rig", "box2")
    assert tui.returncode == 2 and "not the TUI" in tui.stderr
    assert not crashed(tui.stderr)


def test_a_connection_lost_while_the_command_runs_is_one_line(link: Link) -> None:
    """The rig's sshd session killed under a running `gpus --watch`: what ran there is unknown here."""
    watching = link.here.popen("--rig", "box2", "gpus", "--watch", "--interval", "0.2")
    Rig.wait_for(watching, "GPU")  # its lines stream: the command runs there
    sessions = psutil.Process(link.sshd.proc.pid).children(recursive=True)
    assert sessions
    for session in sessions:
        session.kill()
    code, out = Rig.finish(watching, timeout=60)
    assert code == 1, out
    last = out.strip().splitlines()[-1]
    assert last.startswith("rigctl: rig box2 (box2): the connection dropped while the command ran there"), out


def test_a_line_the_cut_left_open_is_ended_before_rigctls_own(link: Link) -> None:
    """The rig's last line was cut mid-way (ssh hands over what it had at EOF): rigctl's one line
    starts a line of its own, not the tail of the rig's. The rig's 'rigctl' prints a whole line and
    half of the next in one write, then runs on until its session is killed."""
    cut = link.sshd.home / "cut-rigctl"
    cut.write_text(
        f'#!/bin/sh\nif [ "$1" = --version ]; then echo "rigctl {__version__}"; exit 0; fi\n'
        "printf 'a whole line\\nhalf a li'\nexec sleep 120\n"
    )
    cut.chmod(0o755)
    link.name_rig(rigctl=str(cut))
    watching = link.here.popen("--rig", "box2", "gpus", "--watch")
    Rig.wait_for(watching, "a whole line")
    for session in psutil.Process(link.sshd.proc.pid).children(recursive=True):
        session.kill()
    code, out = Rig.finish(watching, timeout=60)
    assert code == 1, out
    lines = out.splitlines()
    assert "half a li" in lines, out  # the rig's bytes kept, as a line of their own
    assert lines[-1].startswith("rigctl: rig box2 (box2): the connection dropped while the command ran there"), out
