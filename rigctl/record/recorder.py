"""The recorder: while a profile serves, one row per interval (10 s by default) of what the
engine and the serving GPUs did, tagged with the profile and its boot.

Gauges (KV usage, running, waiting) are sampled several times an interval (five headless, every
dashboard poll in the TUI) so a short peak is not missed; counters and histograms are read as
their increase between interval ends. When the boot changes under it (a switch) the new boot is
counted from its start; when the recorder itself starts, from its first scrape.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from rigctl.bench.live import EndedBench, LiveBench, read_ended, read_live
from rigctl.engine.metrics import EngineSnapshot
from rigctl.gpu.holders import serving_gpus
from rigctl.gpu.model import RigSnapshot
from rigctl.record.rows import BENCH_TAG, Row, interval
from rigctl.record.store import RecordTrouble, RecordWriter
from rigctl.state.statefiles import ServerRecord

COMPACT_EVERY_S = 3600
PENDING_ROWS = 8640  # rows kept in memory while the record cannot be written: a day at 10 s, ~10 MB


def boot_key(record: ServerRecord) -> str:
    """What tags a boot's rows: its boot token, else the profile and start time."""
    return record.boot_key


LIVE_EVERY_S = 2.0
ENDED_LATE_S = 120.0  # how late a starved recorder may first see the last arm's server and still give it back


def tagged_boot(record: ServerRecord, live: LiveBench | None, ended: EndedBench | None = None) -> str:
    """The boot's key, tagged as bench traffic when a running bench started this server (each arm
    is a fresh boot after the bench's mark was written; the server serving before it is not).
    `ended`: given at the first sight of a server, the last bench that ended: a server it started
    but first seen after it ended (a recorder starved on a loaded machine) holds the bench's last
    arm in its counters, so what it counted until now is the bench's, not the owner's."""
    key = boot_key(record)
    # Any server but the one serving when the bench began is the bench's: by that server's key
    # when the mark names it (a start time read back from the process can be a second early).
    if live is not None and live.alive and not live.ended:
        started_by_bench = key != live.before if live.before else record.started >= live.started
        if started_by_bench:
            return f"{BENCH_TAG}{live.plan}:{key}"
    if live is None and ended is not None and ended.started <= record.started <= ended.ended:
        return f"{BENCH_TAG}{ended.plan}:{key}"
    return key


class BenchTags:
    """Observations of a server, tagged when a bench started it. The bench's mark (written before
    its first switch, gone when it ends) is read at each new boot and at most every LIVE_EVERY_S
    between: the last control's server serves on after the bench, as real use again."""

    def __init__(self) -> None:
        self._read = -LIVE_EVERY_S
        self._seen: LiveBench | None = None
        self._server = ""

    def observation(self, record: ServerRecord, snapshot: EngineSnapshot, read_energy: Callable[[], float | None]) -> Observation:
        now, server = time.monotonic(), boot_key(record)
        first_sight = server != self._server
        if now - self._read >= LIVE_EVERY_S or first_sight:  # a new boot reads it afresh
            self._read, self._seen, self._server = now, read_live(), server
        ended = read_ended() if first_sight and self._seen is None else None
        if ended is not None and time.time() - ended.ended > ENDED_LATE_S:
            ended = None  # long over: a recorder started since counts this server from its own first sight
        return Observation(record.profile, tagged_boot(record, self._seen, ended), snapshot, read_energy, boot_key(record))


def held_energy(rig: RigSnapshot | None, pid: int | None) -> float | None:
    """The energy counters (J since driver load) of the GPUs the server holds, summed; None
    when one of them does not say."""
    if rig is None:
        return None
    held = set(serving_gpus(rig.samples, pid))
    readings = [s.energy_j for s in rig.samples if s.index in held]
    return sum(r for r in readings if r is not None) if readings and None not in readings else None


@dataclass(frozen=True)
class Observation:
    profile: str
    boot: str
    snapshot: EngineSnapshot
    # the serving GPUs' cumulative energy, read only at an interval's ends (it asks which
    # processes hold which GPU: not worth doing every sample)
    read_energy: Callable[[], float | None] = lambda: None
    server: str = ""  # the boot's own key, untagged: a bench's tag may come and go on one server


class Notes:
    """Trouble said once while it lasts, and once more when it passes: a recorder runs for months,
    and a line every 2 s of the same fault would bury the journal."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self._open: dict[str, str] = {}

    def trouble(self, key: str, text: str) -> None:
        if key not in self._open:
            self._open[key] = text
            self.say(text)

    def clear(self, key: str) -> bool:
        """Forget `key`'s trouble without a word (the caller says the news itself); was it open?"""
        return self._open.pop(key, None) is not None

    def passed(self, key: str, text: str) -> None:
        if self._open.pop(key, None) is not None:
            self.say(text)


@dataclass
class _Interval:
    begin: Observation
    started: float
    energy_j: float | None
    kv_max: float | None = None
    kv_seconds: float = 0.0
    running_max: float | None = None
    waiting_max: float | None = None
    last_gauge: float = field(default_factory=time.monotonic)

    def gauge(self, snap: EngineSnapshot) -> None:
        now = time.monotonic()
        if snap.kv_usage is not None:
            self.kv_max = max(self.kv_max or 0.0, snap.kv_usage)
            self.kv_seconds += snap.kv_usage * (now - self.last_gauge)
        self.last_gauge = now
        for name in ("running", "waiting"):
            value = getattr(snap, name)
            if value is not None:
                current = getattr(self, f"{name}_max")
                setattr(self, f"{name}_max", max(current or 0.0, value))


def _empty(like: EngineSnapshot) -> EngineSnapshot:
    return EngineSnapshot(like.timestamp, process_start=like.process_start)


class Recorder:
    """The rows of what it is shown: `step` takes one observation (None: nothing serves, or it
    did not answer); headless, `run` polls a ServingSource five times an interval, in the TUI
    the dashboard's own engine poll feeds it (rigctl/observe/background.py)."""

    def __init__(
        self,
        writer: RecordWriter,
        interval_s: float = 10.0,
        on_row: Callable[[Row], None] = lambda row: None,
        notes: Notes | None = None,
    ) -> None:
        self.writer, self.interval_s, self.on_row = writer, interval_s, on_row
        self.notes = notes or Notes(lambda text: None)
        self.rows_written = 0
        self._current: _Interval | None = None
        self._compacted = -math.inf
        self._pending: deque[Row] = deque(maxlen=PENDING_ROWS)
        self.dropped = 0  # rows lost because trouble outlasted PENDING_ROWS
        self._last: Observation | None = None

    @property
    def due(self) -> bool:
        """The next observation ends an interval (or starts the first)."""
        current = self._current
        return current is None or time.monotonic() - current.started >= self.interval_s * 0.999

    def new_boot(self, seen: Observation) -> bool:
        return self._current is not None and seen.boot != self._current.begin.boot

    def _compact(self) -> None:
        """Hourly. A clock that disagrees with the record deletes nothing (said once); trouble that
        may pass is tried again at the next row; any other is raised (the recorder stops)."""
        now = time.time()
        try:
            problem = self.writer.clock_problem(now)
            if problem:
                self.notes.trouble("clock", problem)
            else:
                self.notes.passed("clock", "the clock agrees with the record again: compaction resumes")
                self.writer.compact(now)
        except RecordTrouble as exc:
            if not exc.passing:
                raise
            self.notes.trouble("write", f"{exc}; rows are kept in memory and written when it passes")
            return
        self._compacted = time.monotonic()

    def step(self, seen: Observation | None) -> None:
        """One observation; RecordTrouble only for trouble that will not pass by itself."""
        if time.monotonic() - self._compacted >= COMPACT_EVERY_S:
            self._compact()
        current, due = self._current, self.due
        self._last = seen
        if seen is None:
            self._current = None  # the next answer starts afresh
        elif current is None:
            self._current = _Interval(seen, time.monotonic(), seen.read_energy())
        elif seen.boot != current.begin.boot and seen.server and seen.server == current.begin.server:
            # the same server, its tag changed (a bench began or ended): the row ends here with the
            # old tag and the counting goes on from here, never from zero again
            ended, energy = time.monotonic(), seen.read_energy()
            self._write(current, replace(seen, profile=current.begin.profile, boot=current.begin.boot), energy, ended)
            self._current = _Interval(seen, ended, energy, last_gauge=ended)
        elif seen.boot != current.begin.boot:
            # a new boot while we watched: count it from its start, not from our first sight of it
            self._current = _Interval(
                Observation(seen.profile, seen.boot, _empty(seen.snapshot)), time.monotonic(), seen.read_energy()
            )
            self._current.gauge(seen.snapshot)
        else:
            current.gauge(seen.snapshot)
            if due:
                # the next interval starts at this observation, not after the write: a slow write (a
                # lock waited on) must not drop its seconds from both rows
                ended, energy = time.monotonic(), seen.read_energy()
                self._write(current, seen, energy, ended)
                self._current = _Interval(seen, ended, energy, last_gauge=ended)

    def finish(self) -> None:
        """The interval under way ends now, at the last observation: a recorder that stops (a
        service told to, a TUI standing aside for one) leaves no seconds unwritten."""
        current, last = self._current, self._last
        self._current = None
        if current is None or last is None or last.boot != current.begin.boot or last is current.begin:
            return
        self._write(current, last, last.read_energy(), time.monotonic())

    def _write(self, span: _Interval, end: Observation, energy_now: float | None, ended: float) -> None:
        energy = None
        if span.energy_j is not None and energy_now is not None and energy_now >= span.energy_j:
            energy = energy_now - span.energy_j
        row = interval(
            span.begin.snapshot,
            end.snapshot,
            end.profile,
            end.boot,
            seconds=ended - span.started,
            kv_usage_max=span.kv_max,
            kv_usage_seconds=span.kv_seconds,
            running_max=span.running_max,
            waiting_max=span.waiting_max,
            energy_j=energy,
        )
        if len(self._pending) == self._pending.maxlen:
            self.dropped += 1
        self._pending.append(row)
        self.flush()

    def flush(self) -> None:
        """Write the rows kept while the record could not be written, oldest first; trouble that may
        pass keeps them for the next try (at the next row), other trouble is raised."""
        while self._pending:
            row = self._pending[0]
            try:
                self.writer.add(row)
            except RecordTrouble as exc:
                if not exc.passing:
                    raise
                self.notes.trouble("write", f"{exc}; rows are kept in memory (up to {PENDING_ROWS}) and written when it passes")
                return
            self._pending.popleft()
            self.rows_written += 1
            self.on_row(row)
        self.notes.passed(
            "write",
            f"the record is written again ({self.writer.path})"
            + (f"; {self.dropped} rows were lost while it could not be" if self.dropped else ""),
        )
