"""A real OpenSSH server on 127.0.0.1 for the tests of `rigctl --rig`: its own generated host
key, a generated user key, and an ssh client config that names the server as a Host. The
remote rig's environment (its XDG dirs, its simulated GPUs) is set by sshd's SetEnv, as a
real rig's would be by its own login."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.serving import free_port
from tests.support.waiting import wait_until

SSHD = "/usr/sbin/sshd"


def keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rigctl-test", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


def remote_rigctl() -> str:
    """The rigctl the remote side runs: this venv's console script (what `pip install` put there)."""
    script = Path(sys.executable).parent / "rigctl"
    if not script.is_file():
        pytest.skip(f"no rigctl console script beside {sys.executable} (pip install -e . makes one)")
    return str(script)


class Sshd:
    def __init__(self, home: Path, env: dict[str, str]) -> None:
        if not Path(SSHD).is_file() or not shutil.which("ssh") or not shutil.which("ssh-keygen"):
            pytest.skip("no OpenSSH server and client (apt-get install openssh-server; .ci/run installs it)")
        privsep = Path("/run/sshd")  # sshd refuses to start without its privilege separation dir
        if not privsep.is_dir():
            if os.geteuid() != 0:
                pytest.skip("sshd needs /run/sshd, which only root can make here")
            privsep.mkdir(mode=0o755, exist_ok=True)
        home.mkdir(parents=True, exist_ok=True)
        self.home = home
        self.port = free_port()
        host_key = keygen(home / "host_key")
        user_key = keygen(home / "user_key")
        (home / "authorized_keys").write_text(user_key + "\n")
        self.known_hosts = home / "known_hosts"
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {host_key}\n")
        set_env = " ".join(f'"{k}={v}"' for k, v in sorted(env.items()))
        (home / "sshd_config").write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {home / 'host_key'}\nPidFile {home / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {home / 'authorized_keys'}\nStrictModes no\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin prohibit-password\n"
            f"SetEnv {set_env}\n"
        )
        self.client_config = self.write_client_config(self.known_hosts)
        self.log = home / "sshd.log"
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(home / "sshd_config")], stdout=subprocess.DEVNULL, stderr=self.log.open("wb")
        )
        wait_until("sshd listening", lambda: "Server listening" in self.log.read_text(), proc=None, timeout=30)

    def write_client_config(self, known_hosts: Path, port: int | None = None, key: Path | None = None) -> Path:
        """The client's config: Host `box2` is this server (`port`: another, for a rig that is down;
        `key`: another user key than the one the server authorises)."""
        path = self.home / f"ssh_config_{port or self.port}_{known_hosts.name}_{(key or self.home).name}"
        path.write_text(
            f"Host box2\n  HostName 127.0.0.1\n  Port {port or self.port}\n  User {_user()}\n"
            f"  IdentityFile {key or self.home / 'user_key'}\n  IdentitiesOnly yes\n  UserKnownHostsFile {known_hosts}\n"
            "  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n"
        )
        return path

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name
