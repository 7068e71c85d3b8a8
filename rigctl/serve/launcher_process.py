"""The default launcher: rigctl starts vLLM itself, in its own session and process group,
output to a log file under the state dir. Stop is SIGTERM to the group, a grace period,
then SIGKILL and a bounded wait. A later rigctl adopts the server through the server
record, or finds it by the boot token in its environment when the record is lost."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from rigctl import paths
from rigctl.errors import StopFailed
from rigctl.files import open_own
from rigctl.proc import start_id, start_time
from rigctl.state import discover
from rigctl.state.servers import ProcessView
from rigctl.state.statefiles import ServerRecord

if TYPE_CHECKING:
    from rigctl.profiles.vllm_args import LaunchSpec

KEEP_LOGS = 30


def logs_dir() -> Path:
    return paths.ensure_private_dir(paths.state_dir() / "logs")


def resolve_program(program: str, env: dict[str, str]) -> tuple[str | None, str | None]:
    """(path, problem): where `program` is found on the PATH the server will get."""
    search = env.get("PATH", os.environ.get("PATH", os.defpath))
    if "/" in program:
        path = os.path.expanduser(program)
        if not os.path.exists(path):
            return None, f"{program}: no such file"
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            return None, f"{program}: not an executable file"
        return path, None
    found = shutil.which(program, path=search)
    if not found:
        return None, f"{program!r} is not on PATH"
    return found, None


def interpreter_problem(path: str) -> str | None:
    """A script whose `#!` interpreter is gone (the venv it was installed in was deleted) is
    executable by every test but fails at exec: read its first line."""
    try:
        with open(path, "rb") as handle:
            head = handle.readline(512)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].decode(errors="replace").split()
    if not words:
        return None
    interpreter = words[0]
    if interpreter.endswith("/env") and len(words) > 1:
        return None if shutil.which(words[1]) else f"{path}: its interpreter {words[1]!r} is not on PATH"
    if not os.path.exists(interpreter):
        return f"{path}: its interpreter {interpreter} is gone (was its venv deleted?)"
    return None


class ProcessLauncher(ProcessView):
    def __init__(self, kill_wait: float = 10.0, child_env: Mapping[str, str] | None = None) -> None:
        self.kill_wait = kill_wait  # seconds a process may take to vanish after SIGKILL before rigctl says so
        # what every server it starts is told besides its profile's [env] (the simulated rig to be)
        self.child_env = dict(child_env or {})
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def check(self, spec: LaunchSpec) -> list[str]:
        path, problem = resolve_program(spec.argv[0], spec.env)
        problem = problem or (interpreter_problem(path) if path else None)
        problems = (
            [
                (
                    f"cannot start vLLM: {problem} (set [server] vllm_command in config.toml, or the "
                    "profile's [rigctl] vllm_command, to the vllm of your venv)"
                )
            ]
            if problem
            else []
        )
        log_problem = paths.writable_problem(paths.state_dir() / "logs")
        if log_problem:
            problems.append(f"cannot write the server log: {log_problem}")
        return problems

    def start(self, spec: LaunchSpec, profile: str) -> ServerRecord:
        directory = logs_dir()
        log_path, fd = _new_log(directory, f"{time.strftime('%Y%m%d-%H%M%S')}-{profile}")
        boot_id = uuid.uuid4().hex
        env = {
            **os.environ,
            **self.child_env,
            **spec.env,
            discover.BOOT_ID_VAR: boot_id,
            discover.PROFILE_VAR: profile,
            discover.LOG_VAR: str(log_path),
            discover.STATE_VAR: str(paths.state_dir()),
        }
        try:
            child = subprocess.Popen(
                list(spec.argv), stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        except OSError as exc:
            try:
                os.write(fd, f"rigctl: cannot start {spec.argv[0]}: {exc.strerror}\n".encode())
            except OSError:
                pass
            raise
        finally:
            os.close(fd)
        self._children[child.pid] = child
        _prune(directory)
        return ServerRecord(
            launcher=self.name,
            profile=profile,
            started=time.time(),
            log_path=str(log_path),
            host=spec.host,
            port=spec.port,
            served_names=spec.served_names,
            argv=tuple(spec.redacted_argv()),
            pid=child.pid,
            create_time=start_time(child.pid),
            boot_id=boot_id,
            start_id=start_id(child.pid),
        )

    def alive(self, record: ServerRecord) -> bool:
        child = self._children.get(record.pid or -1)
        if child is not None:  # one this process started: its own wait status says
            return child.poll() is None
        return super().alive(record)

    def exit_code(self, record: ServerRecord) -> int | None:
        """The exit status once the server has exited (-1 when rigctl did not start it), else None."""
        child = self._children.get(record.pid or -1)
        if child is not None:
            return child.poll()
        return super().exit_code(record)

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
            deadline = time.monotonic() + self.kill_wait
            while _group_alive(group, self._children.get(group)):
                if time.monotonic() > deadline:
                    raise StopFailed(
                        f"its process group {group} is still alive {self.kill_wait:g} s "
                        f"after SIGKILL: a process stuck in the driver, or not rigctl's to kill; "
                        f"look at `ps -o pid,stat,user,cmd -g {group}`"
                    )
                time.sleep(0.05)
        self._reap(record)

    def _reap(self, record: ServerRecord) -> None:
        child = self._children.pop(record.pid or -1, None)
        if child is not None:
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


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


def _new_log(directory: Path, stem: str) -> tuple[Path, int]:
    """A log file made new for this boot: O_EXCL never opens what is there already, so a link
    planted under the next log's name is passed over, never written through."""
    for n in range(1, 100):
        path = directory / (f"{stem}.log" if n == 1 else f"{stem}.{n}.log")
        try:
            return path, open_own(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND)
        except FileExistsError:
            continue
    raise FileExistsError(f"{directory}: no free name for {stem}.log")


def _prune(directory: Path) -> None:
    try:
        logs = sorted(directory.glob("*.log"), key=lambda p: p.lstat().st_mtime)
    except OSError:
        return
    for old in logs[:-KEEP_LOGS]:
        try:
            old.unlink()
        except OSError:
            pass
