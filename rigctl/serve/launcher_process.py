"""The default launcher: rigctl starts vLLM itself, in its own session and process group,
output to a log file under the state dir. Stop is SIGTERM to the group, a grace period,
then SIGKILL. A later rigctl adopts the server through the server record."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import psutil

from rigctl import paths
from rigctl.profiles.vllm_args import LaunchSpec
from rigctl.serve.logfollow import FileFollower
from rigctl.serve.record import ServerRecord

KEEP_LOGS = 30


def logs_dir() -> Path:
    return paths.ensure_private_dir(paths.state_dir() / "logs")


class ProcessLauncher:
    name = "process"

    def __init__(self) -> None:
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, spec: LaunchSpec, profile: str) -> ServerRecord:
        directory = logs_dir()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        log_path = directory / f"{stamp}-{profile}.log"
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            child = subprocess.Popen(list(spec.argv), stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.STDOUT,
                                     env={**os.environ, **spec.env}, start_new_session=True)
        except OSError as exc:
            os.write(fd, f"rigctl: cannot start {spec.argv[0]}: {exc.strerror}\n".encode())
            os.close(fd)
            raise
        os.close(fd)
        self._children[child.pid] = child
        _prune(directory)
        try:
            created = psutil.Process(child.pid).create_time()
        except psutil.Error:
            created = None
        return ServerRecord(launcher=self.name, profile=profile, started=time.time(), log_path=str(log_path),
                            host=spec.host, port=spec.port, served_names=spec.served_names,
                            argv=tuple(spec.redacted_argv()), pid=child.pid, create_time=created,
                            api_key=_first_key(spec))

    def alive(self, record: ServerRecord) -> bool:
        if record.pid is None:
            return False
        child = self._children.get(record.pid)
        if child is not None:
            return child.poll() is None
        try:
            proc = psutil.Process(record.pid)
            same = record.create_time is None or abs(proc.create_time() - record.create_time) < 1.0
            return same and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def exit_code(self, record: ServerRecord) -> int | None:
        """The exit status once the server has exited (-1 when rigctl did not start it), else None."""
        child = self._children.get(record.pid or -1)
        if child is not None:
            return child.poll()
        return None if self.alive(record) else -1

    def stop(self, record: ServerRecord, grace: float) -> None:
        if record.pid is None or not self.alive(record):
            self._reap(record)
            return
        group = record.pid  # the session leader's pid is the group id
        _signal_group(group, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _group_alive(group, self._children.get(group)):
            time.sleep(0.05)
        if _group_alive(group, self._children.get(group)):
            _signal_group(group, signal.SIGKILL)
            while _group_alive(group, self._children.get(group)):
                time.sleep(0.02)
        self._reap(record)

    def _reap(self, record: ServerRecord) -> None:
        child = self._children.pop(record.pid or -1, None)
        if child is not None:
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    def follower(self, record: ServerRecord, from_end: bool = False) -> FileFollower:
        return FileFollower(record.log_path, from_end=from_end)


def _first_key(spec: LaunchSpec) -> str | None:
    argv = list(spec.argv)
    return argv[argv.index("--api-key") + 1] if "--api-key" in argv else None


def _signal_group(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(group: int, child: subprocess.Popen[bytes] | None) -> bool:
    if child is not None:
        child.poll()  # reap the leader so a zombie does not count as alive
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(0) succeeds while zombies remain; only living members count
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.pid) == group and proc.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return False


def _prune(directory: Path) -> None:
    logs = sorted(directory.glob("*.log"), key=lambda p: p.stat().st_mtime)
    for old in logs[:-KEEP_LOGS]:
        try:
            old.unlink()
        except OSError:
            pass
