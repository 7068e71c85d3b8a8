"""The fault-matrix harness: a real `rigctl` subprocess per command, on the simulated rig, with
its own XDG dirs and port, and the checks every case ends with.

After any command, whatever went wrong: the state file never says "switching" unless its
owner lives, no process that rigctl started is left unrecorded, the profiles are as they were,
and what the CLI printed has no traceback.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.support.serving import free_port

RIG = "2x3090-nvlink"
SERVED = "qwen3.6-27b"


def crashed(output: str) -> bool:
    """rigctl's own traceback (vLLM's, quoted in a failure line, starts with its process prefix)."""
    return any(line.startswith("Traceback (most recent call last)") for line in output.splitlines())


class MountNamespace:
    """A private mount namespace kept open by a sleeping process; commands enter it with nsenter.
    What is mounted there (a small tmpfs, a read-only bind) is seen by rigctl and the servers it
    starts, and by nothing else on the machine."""

    def __init__(self) -> None:
        if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nsenter"):
            pytest.skip("needs root with unshare and nsenter to mount a private filesystem")
        self.holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sleep", "600"])
        deadline = time.monotonic() + 5
        while os.readlink(f"/proc/{self.holder.pid}/ns/mnt") == os.readlink("/proc/self/ns/mnt"):
            if self.holder.poll() is not None or time.monotonic() > deadline:
                pytest.skip("unshare could not make a mount namespace here")
            time.sleep(0.02)
        self.prefix = ("nsenter", f"--target={self.holder.pid}", "--mount", "--")

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, *argv], capture_output=True, text=True, timeout=60)

    def close(self) -> None:
        self.holder.kill()
        self.holder.wait()


@contextlib.contextmanager
def private_mounts(rig: Rig) -> Iterator[MountNamespace]:
    """Run `rig`'s commands in a mount namespace of their own (a small tmpfs, a read-only bind
    over its state dir); its servers are stopped inside it, where their files are."""
    space = MountNamespace()
    rig.prefix = space.prefix
    try:
        yield space
    finally:
        rig.cleanup()
        space.close()


class Rig:
    prefix: tuple[str, ...] = ()  # e.g. a MountNamespace's: every rigctl and every file read goes through it

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.config_dir = home / "config" / "rigctl"
        self.state_dir = home / "state" / "rigctl"
        self.profiles = self.config_dir / "profiles"
        self.profiles.mkdir(parents=True, exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("RIGCTL_")}
        self.env.update(
            {
                "XDG_CONFIG_HOME": str(home / "config"),
                "XDG_STATE_HOME": str(home / "state"),
                "XDG_CACHE_HOME": str(home / "cache"),
                "RIGCTL_SIM": RIG,
                "RIGCTL_SIM_TIME_SCALE": "0.002",
                "PYTHONUNBUFFERED": "1",
                "PYTHONFAULTHANDLER": "1",  # a hung command, aborted by finish(), says where each thread was
            }
        )
        self.write_config("[server]\nstop_grace = 3\nkill_wait = 2\n")
        self.add_profile("good", "")
        self.add_profile("alt", "", parent="qwen36-27b-fp8-tp2")

    # -- set-up -------------------------------------------------------------------

    def write_config(self, text: str) -> None:
        (self.config_dir / "config.toml").write_text(text)

    def add_profile(self, name: str, body: str, parent: str = "qwen36-27b-awq-tp2", port: int | None = None) -> Path:
        """A user profile on this rig's port; `body` goes on in its [vllm] table (it may open others)."""
        path = self.profiles / f"{name}.toml"
        path.write_text(f'extends = "{parent}"\n[vllm]\nport = {port or self.port}\n{body}')
        return path

    def profiles_digest(self) -> str:
        return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(self.profiles.glob("*.toml")))).hexdigest()

    # -- running rigctl -------------------------------------------------------------

    def rigctl(
        self, *args: str, timeout: float = 120, env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*(prefix or self.prefix), sys.executable, "-m", "rigctl", *args],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert not crashed(done.stderr), done.stdout + done.stderr
        return done

    def popen(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*self.prefix, sys.executable, "-m", "rigctl", *args],
            env={**self.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    @staticmethod
    def wait_for(proc: subprocess.Popen[str], text: str, timeout: float = 60) -> list[str]:
        """Lines of `proc` up to the first that holds `text` (and fail if it ends or stalls first)."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if text in line:
                return seen
            assert time.monotonic() < deadline, f"no {text!r} within {timeout} s:\n{''.join(seen)}"
        raise AssertionError(f"{text!r} never came:\n{''.join(seen)}")

    @staticmethod
    def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str]:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # hung: SIGABRT makes faulthandler print every thread's stack, then the process is gone
            # (never left running past the test), and the failure shows what it was doing
            proc.send_signal(signal.SIGABRT)
            try:
                out, _ = proc.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            raise AssertionError(f"still running after {timeout:g} s; its output and stacks:\n{out}") from None
        assert not crashed(out), out
        return proc.returncode, out

    def status(self) -> dict[str, Any]:
        done = self.rigctl("status", "--json")
        assert done.returncode == 0, done.stderr
        serving: dict[str, Any] = json.loads(done.stdout)["serving"]
        return serving

    # -- what is true ----------------------------------------------------------------

    def serves(self, port: int | None = None) -> tuple[str, int]:
        """(served name, max_model_len) from a real GET of /v1/models; the test fails when nothing answers."""
        answer = self.answering(port)
        assert answer is not None, f"nothing answers on port {port or self.port}"
        return answer

    def answering(self, port: int | None = None) -> tuple[str, int] | None:
        """(served name, max_model_len) from a real GET of /v1/models, or None when nothing answers."""
        try:
            cards = httpx.get(f"http://127.0.0.1:{port or self.port}/v1/models", timeout=10).json()["data"]
        except (httpx.HTTPError, ValueError, KeyError):
            return None
        return cards[0]["id"], cards[0]["max_model_len"]

    def listener_pid(self, port: int | None = None) -> int | None:
        for conn in psutil.net_connections("tcp"):
            if conn.status == psutil.CONN_LISTEN and getattr(conn.laddr, "port", None) == (port or self.port):
                return conn.pid
        return None

    def read_json(self, path: Path) -> dict[str, Any] | None:
        if self.prefix:
            done = subprocess.run([*self.prefix, "cat", str(path)], capture_output=True, text=True, timeout=30)
            text = done.stdout if done.returncode == 0 else ""
        else:
            try:
                text = path.read_text()
            except OSError:
                return None
        try:
            data = json.loads(text)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def record(self) -> dict[str, Any]:
        """server.json; the test fails when there is none."""
        record = self.record_if_any()
        assert record is not None, "no server.json"
        return record

    def record_if_any(self) -> dict[str, Any] | None:
        return self.read_json(self.state_dir / "server.json")

    def state(self) -> dict[str, Any]:
        """active.json; the test fails when there is none."""
        state = self.read_json(self.state_dir / "active.json")
        assert state is not None, "no active.json"
        return state

    def state_if_any(self) -> dict[str, Any]:
        """active.json, or an empty object while there is none (a test waiting for it to say something)."""
        return self.read_json(self.state_dir / "active.json") or {}

    def started_servers(self) -> list[psutil.Process]:
        """Every live process a rigctl of this rig started: it carries a boot token and this state dir."""
        out = []
        for proc in psutil.process_iter():
            try:
                env = proc.environ()
            except (psutil.Error, OSError):
                continue
            if (
                "RIGCTL_BOOT_ID" in env
                and env.get("RIGCTL_SERVER_STATE") == str(self.state_dir)
                and proc.status() != psutil.STATUS_ZOMBIE
            ):
                out.append(proc)
        return out

    def orphans(self) -> list[int]:
        """Servers of this rig that no record names (status cannot see them, stop cannot stop them)."""
        record = self.record_if_any() or {}
        leaders = {p.pid for p in self.started_servers() if os.getpgid(p.pid) == p.pid}
        return sorted(pid for pid in leaders if pid != record.get("pid"))

    def check_invariants(self, digest: str | None = None) -> None:
        state = self.state()
        if state and state["status"] == "switching":
            assert psutil.pid_exists(state["owner_pid"]), f"state says switching, its owner is gone: {state}"
        assert not self.orphans(), f"unrecorded servers: {self.orphans()} (record {self.record()})"
        if digest is not None:
            assert self.profiles_digest() == digest, "the profiles changed"
        history = self.rigctl("history", "--json")
        assert history.returncode == 0 and isinstance(json.loads(history.stdout), list)

    def cleanup(self) -> None:
        try:
            self.rigctl("stop", timeout=60)
        except (AssertionError, subprocess.TimeoutExpired):
            pass
        for proc in self.started_servers():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
