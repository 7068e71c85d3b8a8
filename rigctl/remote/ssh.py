"""One rigctl command on another rig, through the system's `ssh` (the owner's keys, agent and
~/.ssh/config; rigctl keeps no keys and accepts no host key for the owner).

The remote side runs a fixed POSIX sh script with everything the owner typed as its positional
arguments: no argument is ever pasted into script text, and each word is quoted once for the
login shell that sshd hands the command line to. The script first asks the rig's rigctl its
version and runs the command only when it is this one's (another version may mean another flag
or another exit code); it says which on stderr behind a marker, so everything on stderr before
the marker is ssh's or the login shell's, and ssh's exit 255 before it is a connection that
never carried the command.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rigctl import __version__
from rigctl.errors import RigctlError, one_line
from rigctl.rig_table import RemoteRig

MARK = "\x1erigctl-remote:"  # a record separator first: no line rigctl or a shell prints starts with it
SSH_FAILED = 255  # ssh's own exit status for a failure of its own; rigctl never exits with it
NOT_SAME = 97  # the script's: the rig's rigctl is missing or of another version (said behind MARK)
CONNECT_TIMEOUT_S = 10

# $1 rigctl's path there, $2 the version wanted, $3 the width to render at, $4 the marker; then
# the command. "~/" in the path is the remote user's home (quoted, the shell would not expand it).
SCRIPT = (
    'r=$1 w=$2 c=$3 m=$4; shift 4; case $r in "~/"*) r="$HOME/${r#??}";; esac; '
    'v=$("$r" --version 2>&1); '
    'if [ "$v" != "$w" ]; then printf "%sdiffers %s\\n" "$m" "$v" >&2; exit 97; fi; '
    'printf "%sok\\n" "$m" >&2; exec env COLUMNS="$c" "$r" "$@"'
)


def ssh_argv(rig: RemoteRig, args: Sequence[str], columns: int = 80) -> list[str]:
    """The argv that runs `rigctl ARGS` on `rig`. The owner's ssh_options come first: for ssh the
    first value of an option wins, so theirs override the batch mode and timeout set here."""
    ssh = shutil.which("ssh")
    if ssh is None:
        raise RigctlError("no ssh client here to reach another rig (install openssh-client)")
    remote = ["sh", "-c", SCRIPT, "rigctl", rig.rigctl, f"rigctl {__version__}", str(columns), MARK, *args]
    return [
        ssh,
        "-T",  # no terminal there: the answer is a byte stream, exactly what the command printed
        *rig.ssh_options,
        "-o",
        "BatchMode=yes",  # never a password or host-key prompt: an unknown host is refused, said here
        "-o",
        f"ConnectTimeout={CONNECT_TIMEOUT_S}",
        "--",
        rig.ssh,
        shlex.join(remote),
    ]


@dataclass(frozen=True)
class RemoteExit:
    code: int  # the remote rigctl's exit code
    connected: bool  # the command ran there (False: it never started, and `code` is not its)


def connection_error(rig: RemoteRig, code: int, said: Sequence[str]) -> RigctlError:
    """One line for a command that never ran there: from ssh's words (exit 255) or the script's."""
    where = f"rig {rig.name} ({rig.ssh})"
    text = "\n".join(said)
    for line in said:
        if line.startswith(MARK + "differs "):
            answer = line.removeprefix(MARK + "differs ").strip()
            if answer.startswith("rigctl ") and " " not in answer.removeprefix("rigctl "):
                return RigctlError(
                    f"{where} runs {answer}, this is rigctl {__version__}: install the same version there "
                    "(flags and exit codes may differ)"
                )
            return RigctlError(
                f"{where}: no rigctl at {rig.rigctl!r} there ({one_line(answer[-200:]) or 'no answer'}); set "
                f'[rigs.{rig.name}] rigctl to its path, e.g. "~/.local/bin/rigctl" (ssh commands get a short PATH)'
            )
    last = one_line(next((line for line in reversed(said) if line.strip()), f"ssh exited {code}"))
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        return RigctlError(f"{where}: its host key CHANGED since it was known; rigctl will not connect ({last})")
    if "Host key verification failed" in text or "No ED25519 host key is known" in text or "host key is known" in text:
        return RigctlError(
            f"{where}: its host key is not known here; connect once with `ssh {rig.ssh}` and check the "
            "fingerprint (rigctl never accepts a host key for you)"
        )
    if "Permission denied" in text:
        return RigctlError(f"{where} refused the login ({last}); check the key ssh offers (ssh-add -l)")
    unreachable = ("Connection refused", "timed out", "No route to host", "Could not resolve", "unreachable", "Connection closed")
    if any(words in text for words in unreachable):
        return RigctlError(f"{where} does not answer: {last}")
    return RigctlError(f"{where}: ssh failed: {last}")


def run_remote(
    rig: RemoteRig,
    args: Sequence[str],
    on_stdout: Callable[[bytes], None],
    on_stderr: Callable[[bytes], None],
    columns: int = 80,
    stdin: int | None = None,
    started: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> RemoteExit:
    """Run `rigctl ARGS` on `rig`, handing each line of its stdout and stderr over as it comes.
    RigctlError (one line) when the command never ran there; a connection lost while it ran
    is one too, since what the command did is then not known here. `stdin`: None inherits
    this process's (a command that reads it), subprocess.DEVNULL from the TUI."""
    proc = subprocess.Popen(ssh_argv(rig, args, columns), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if started is not None:
        started(proc)
    held: list[str] = []  # stderr before the marker: ssh's and the login shell's, shown only to explain a failure
    ran = threading.Event()

    def read_stderr() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            if ran.is_set():
                on_stderr(raw)
                continue
            line = raw.decode("utf-8", "replace").rstrip("\r\n")  # ssh ends its own lines with CR LF
            if line == MARK + "ok":
                ran.set()
            else:
                held.append(line)

    reader = threading.Thread(target=read_stderr, name="ssh-stderr", daemon=True)
    reader.start()
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            on_stdout(raw)
        code = proc.wait()
        reader.join()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if not ran.is_set():
        raise connection_error(rig, code, held)
    if code == SSH_FAILED:
        raise RigctlError(
            f"rig {rig.name} ({rig.ssh}): the connection dropped while the command ran there; what it did is "
            f"not known here (rigctl --rig {rig.name} status)"
        )
    return RemoteExit(code=code, connected=True)
