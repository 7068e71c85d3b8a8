"""The running bench, for whoever looks, and the mark a bench leaves when it is cut short:
state_dir/bench/live.json. Written before the first arm switches (a bench that cannot write it
does not start), rewritten at most twice a second while it runs, removed once the control serves
again. Left behind, it is how the next rigctl (status, switch, bench list, the TUI) knows a bench
was cut short (its owner died: a SIGKILL, a lost SSH session) or ended without putting the
control back (a second Ctrl-C), which profile it left serving, and what `rigctl bench --restore`
puts back.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from rigctl import fmt, jsonio
from rigctl.atomic import write_text_atomic
from rigctl.bench.rawdir import bench_dir, live_file
from rigctl.proc import same_process, start_id

Phase = Literal["starting", "switching", "cold check", "warm-up", "measuring", "quality", "done"]

PERIOD = 0.5


@dataclass(frozen=True)
class ArmProgress:
    number: int
    arms: int
    role: str
    profile: str
    phase: Phase
    done: int = 0
    total: int | None = None
    tok_per_s: float | None = None
    eta_s: float | None = None  # this arm's measuring
    run_eta_s: float | None = None  # the whole run: every arm left, boots included (bench/eta.py)
    run_eta_floor: bool = False  # a part of it is not known yet: the run takes at least run_eta_s


def run_eta(p: ArmProgress) -> str:
    if p.run_eta_s is None or (p.run_eta_floor and p.run_eta_s < 1):
        return ""  # "≥ 0 s" says nothing
    return f"  run ETA {'≥ ' if p.run_eta_floor else ''}{fmt.seconds(p.run_eta_s)}"


def progress_line(p: ArmProgress) -> str:
    """An arm's progress as one line, the same in the CLI's progress and the TUI's bench screen:
    `arm 2/3 B seqs8: measuring 12/32  410 tok/s  arm ETA 30.0 s  run ETA 2.5 min`."""
    head = f"arm {p.number}/{p.arms} {'A' if p.role == 'control' else 'B'} {p.profile}: {p.phase}"
    if p.phase in ("measuring", "done"):
        head += f" {p.done}/{p.total}" if p.total else f" {p.done}"
        head += f"  {p.tok_per_s:,.0f} tok/s" if p.tok_per_s is not None else ""
        head += f"  arm ETA {fmt.seconds(p.eta_s)}" if p.eta_s else ""
    return head + run_eta(p)


@dataclass(frozen=True)
class LiveBench:
    plan: str
    raw_dir: str
    pid: int
    started: float
    updated: float
    progress: ArmProgress
    control: str = ""
    candidate: str = ""
    owner_start: str | None = None
    ended: str = ""  # set when the run ended without putting the control back: why
    alive: bool = True  # its rigctl still runs
    before: str = ""  # the boot key of the server that served when the bench began ("": none)

    def elapsed(self) -> float:
        return self.updated - self.started

    @property
    def cut_short(self) -> bool:
        return not self.alive or bool(self.ended)

    def why(self) -> str:
        """Why the control may not serve, in words."""
        if self.ended:
            return self.ended
        p = self.progress
        return f"rigctl pid {self.pid} died during arm {p.number} of {p.arms} ({p.role} {p.profile}, {p.phase})"

    def note(self, serving: str | None) -> str:
        """The line every command shows while the mark is there."""
        now = f"{serving} serves" if serving else "nothing serves"
        return (
            f"a bench ({self.plan}) was cut short: {self.why()}; {now}, and the control {self.control} was not "
            f"put back: `rigctl bench --restore` puts it back (or switch to the profile you want)"
        )


class LiveWriter:
    def __init__(self, plan: str, raw_dir: Path, control: str, candidate: str, before: str = "") -> None:
        """Writes the mark now: OSError when it cannot be (the bench then touches nothing).
        `before`: the boot key of the server serving now (every other server is the bench's)."""
        self.plan, self.raw_dir, self.control, self.candidate = plan, str(raw_dir), control, candidate
        self.before = before
        self.started = time.time()
        self._last = 0.0
        self._progress = ArmProgress(0, 0, "control", control, "starting")
        self._write(self._progress, "")

    def _write(self, progress: ArmProgress, ended: str) -> None:
        data = {
            "plan": self.plan,
            "raw_dir": self.raw_dir,
            "pid": os.getpid(),
            "owner_start": start_id(os.getpid()),
            "started": self.started,
            "updated": time.time(),
            "control": self.control,
            "candidate": self.candidate,
            "progress": asdict(progress),
            "ended": ended,
            "before": self.before,
        }
        write_text_atomic(live_file(), jsonio.dumps(data), 0o600)

    def __call__(self, progress: ArmProgress) -> None:
        now = time.monotonic()
        self._progress = progress
        if now - self._last < PERIOD and progress.phase == "measuring":
            return
        self._last = now
        try:
            self._write(progress, "")
        except OSError:
            pass  # the mark written at the start stays: it still says a bench runs, and where

    def leave(self, why: str) -> None:
        """The run ends without the control serving: the mark stays, saying why."""
        try:
            self._write(self._progress, why)
        except OSError:
            pass

    def close(self) -> None:
        try:  # kept before the mark goes: a recorder that first sees the last arm's server late
            write_text_atomic(ended_file(), jsonio.dumps({"plan": self.plan, "started": self.started, "ended": time.time()}), 0o600)
        except OSError:
            pass  # a courtesy to the record, never worth a failed bench
        clear_live()


@dataclass(frozen=True)
class EndedBench:
    """The last bench that ended with its control serving: when it ran."""

    plan: str
    started: float
    ended: float


def ended_file() -> Path:
    return bench_dir() / "ended.json"


def read_ended() -> EndedBench | None:
    try:
        data = jsonio.read_object(ended_file())
        return EndedBench(str(data["plan"]), float(data["started"]), float(data["ended"])) if data else None
    except (jsonio.DamagedFile, KeyError, TypeError, ValueError):
        return None


def clear_live() -> None:
    try:
        live_file().unlink()
    except FileNotFoundError:
        pass


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key, "")
    return value if isinstance(value, str) else ""


def read_live() -> LiveBench | None:
    """The bench this rig runs, or the mark of one cut short (alive False, or ended said); None when
    there is neither (or the mark is unreadable: it is only ever a courtesy)."""
    try:
        data = jsonio.read_object(live_file())
    except jsonio.DamagedFile:
        return None
    if not data:
        return None
    try:
        pid = int(data["pid"])
        owner = data.get("owner_start")
        progress = ArmProgress(**data["progress"])
        return LiveBench(
            str(data["plan"]),
            str(data["raw_dir"]),
            pid,
            float(data["started"]),
            float(data["updated"]),
            progress,
            _text(data, "control"),
            _text(data, "candidate"),
            owner if isinstance(owner, str) else None,
            _text(data, "ended"),
            alive=same_process(pid, start=owner if isinstance(owner, str) else None),
            before=_text(data, "before"),
        )
    except (KeyError, TypeError, ValueError):
        return None


def settle(live: LiveBench, how: str) -> None:
    """The owner decided what serves (`bench --restore`, a switch, a stop): the run's directory says
    how it ended, and the mark goes."""
    verdict = Path(live.raw_dir) / "verdict.json"
    try:
        kept = jsonio.read_object(verdict) or {}
    except jsonio.DamagedFile:
        kept = {}
    if kept.get("status") in (None, "running"):
        kept = {
            **kept,
            "plan": live.plan,
            "status": "cut_short",
            "verdict": None,
            "message": f"cut short: {live.why()}",
            "reason": f"cut short: {live.why()}",
        }
    kept["settled"] = how
    try:
        write_text_atomic(verdict, jsonio.dumps(kept, indent=2) + "\n", 0o600)
    except OSError:
        pass  # the run's raw files stay; only its last word is missing
    clear_live()
