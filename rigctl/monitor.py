"""The dashboard's poll loop without Textual: the GPUs on their own cadence, the engine beside.

`Monitor.tick()` samples the rig and returns at once with whatever the engine poll last
finished; the engine (/metrics, /health, what serves) is polled by a thread of its own, so
a vLLM that accepts connections and never answers cannot make the GPU cards stale. A poll
that is still in flight when the next one is due is skipped, never stacked. The TUI turns
each Tick into one message and one repaint.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rigctl.config import Settings
from rigctl.engine.client import Probe
from rigctl.engine.poller import Endpoint, EnginePoller, EngineState
from rigctl.gpu.model import RigSnapshot
from rigctl.gpu.sampler import RigSampler
from rigctl.record.recorder import BenchTags, Observation, held_energy
from rigctl.state.logtail import TailReader
from rigctl.state.servers import view_for
from rigctl.state.serving import ServingStatus, observe
from rigctl.state.statefiles import RecordRead, ServerRecord, read_record_once, state_file

OBSERVE_EVERY = 5  # engine polls between full checks of what serves while nothing changes


def file_stamp(path: Path) -> tuple[int, int, int] | None:
    """Which version of `path` is there (an atomic rewrite is a new inode), or None when none is."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns, found.st_size


ENGINE_WAIT = 0.25  # s a tick waits for the engine poll it just asked for (a local scrape takes ms)


@dataclass(frozen=True)
class Tick:
    rig: RigSnapshot | None  # None when sampling failed (see errors)
    engine: EngineState | None  # a poll that finished since the last tick, else None
    serving: ServingStatus | None
    errors: tuple[tuple[str, str], ...] = ()  # (source, message)
    log: tuple[TailReader, str | None, list[str]] | None = None  # the tail's reader, a new title, new lines


class Monitor:
    def __init__(self, sampler: RigSampler | None, settings: Settings) -> None:
        """`sampler`: None where there is no NVIDIA driver (a CPU build of vLLM): the engine alone."""
        self.sampler = sampler
        self.settings = settings
        self.engine_poller = EnginePoller()
        self._last_rig: RigSnapshot | None = None
        self._lock = threading.Lock()
        self._wanted = threading.Event()
        self._done = threading.Event()
        self._closed = threading.Event()
        self._busy = False
        self._finished: tuple[EngineState, ServingStatus] | None = None
        self._engine_errors: list[tuple[str, str]] = []
        self._thread: threading.Thread | None = None
        self._serving: ServingStatus | None = None
        self._observe_key: object = None
        self._observe_count = 0
        self._endpoint_for: tuple[ServerRecord | None, Endpoint | None] = (None, None)
        self._bench_tags = BenchTags()  # a bench's arms are recorded as bench traffic
        self._tail: TailReader | None = None
        self.endpoint_problem: str | None = None  # why the last poll had no endpoint (a damaged server.json)
        # the serving record's feed (the TUI's BackgroundRecorder.offer): each poll's snapshot,
        # so the record costs no scrape of its own
        self.record_to: Callable[[Observation | None], None] | None = None

    # -- the tick ------------------------------------------------------------------

    def tick(self, engine_due: bool, tail: TailReader | None = None) -> Tick:
        """One rig sample now; an engine poll asked for (unless one is in flight); what the engine
        thread finished since the last tick; the tail's new lines."""
        errors: list[tuple[str, str]] = []
        rig = None
        try:
            rig = self.sampler.snapshot() if self.sampler is not None else None
            self._last_rig = rig
        except Exception as exc:  # noqa: BLE001 - a poll never takes the app down; the view goes stale
            errors.append(("rig", f"{type(exc).__name__}: {exc}"))
        if engine_due and self.request_engine():
            self._done.wait(ENGINE_WAIT)  # fresh figures in this tick when the engine answers at once
        with self._lock:
            finished, self._finished = self._finished, None
            errors += self._engine_errors
            self._engine_errors = []
        log = self._read_tail(tail, errors)
        engine, serving = finished if finished else (None, None)
        return Tick(rig, engine, serving, tuple(errors), log)

    def request_engine(self) -> bool:
        """Ask for an engine poll; False (skipped) when one is still in flight."""
        with self._lock:
            if self._busy:
                return False
            self._busy = True
            self._done.clear()
        if self._thread is None:
            self._thread = threading.Thread(target=self._engine_loop, name="rigctl-engine-poll", daemon=True)
            self._thread.start()
        self._wanted.set()
        return True

    def poll_engine_now(self) -> tuple[EngineState, ServingStatus]:
        """One engine poll in the caller's thread (tests, one-shot tools)."""
        return self._poll_engine()

    # -- the engine thread ------------------------------------------------------------

    def _engine_loop(self) -> None:
        while not self._closed.is_set():
            self._wanted.wait()
            self._wanted.clear()
            if self._closed.is_set():
                return
            try:
                result = self._poll_engine()
                with self._lock:
                    self._finished = result
            except Exception as exc:  # noqa: BLE001 - never fatal: the panel says what went wrong
                with self._lock:
                    self._engine_errors.append(("engine", f"{type(exc).__name__}: {exc}"))
            finally:
                with self._lock:
                    self._busy = False
                self._done.set()

    def _endpoint(self, read: RecordRead) -> Endpoint | None:
        record = read.record
        if record is None:
            return None
        cached_record, endpoint = self._endpoint_for
        if record != cached_record:  # the API key is read once per server, not every second
            launcher = view_for(record, self.settings)
            endpoint = Endpoint(record.base_url, record.profile, launcher.api_key(record), record.pid)
            self._endpoint_for = (record, endpoint)
        return endpoint

    def _poll_engine(self) -> tuple[EngineState, ServingStatus]:
        # server.json read once a poll: the scrape and the check of what serves see the same file
        read = read_record_once()
        endpoint, problem = self._endpoint(read), read.damage
        self.endpoint_problem = problem
        gpus = self._last_rig.samples if self._last_rig else ()
        state = self.engine_poller.unavailable(problem) if problem else self.engine_poller.poll(endpoint, gpus)
        if self.record_to is not None:
            self.record_to(self._observation(state))
        return state, self._observe(state, read)

    def _observation(self, state: EngineState) -> Observation | None:
        record, rig = self._endpoint_for[0], self._last_rig
        if state.error is not None or state.snapshot is None or record is None or not state.snapshot.is_vllm:
            return None  # not vLLM's exposition (an empty 200, a web page): no row of idle serving
        return self._bench_tags.observation(record, state.snapshot, lambda: held_energy(rig, record.pid))

    def _observe(self, engine: EngineState, read: RecordRead) -> ServingStatus:
        """What serves, checked in full (state file, process, HTTP) every OBSERVE_EVERY polls and
        at once whenever the engine's answer changes (down, up, another server)."""
        probe: Probe | None = engine.probe
        # the state file's stamp too: a switch of rigctl's own (the supervisor's restart) ending while
        # the engine answers the same would otherwise stay "switching" here for OBSERVE_EVERY polls,
        # and a death in them was never said
        key = (engine.target, engine.error is None, probe.healthy if probe else None, file_stamp(state_file()))
        self._observe_count += 1
        if self._serving is None or key != self._observe_key or self._observe_count >= OBSERVE_EVERY:
            self._serving = observe(self.settings, probe=probe, read=read)
            self._observe_key, self._observe_count = key, 0
        return self._serving

    # -- the tail ------------------------------------------------------------------

    def _read_tail(
        self, reader: TailReader | None, errors: list[tuple[str, str]]
    ) -> tuple[TailReader, str | None, list[str]] | None:
        if reader is not self._tail:
            if self._tail is not None:
                self._tail.close()  # closed here: this thread is the one that reads it
            self._tail = reader
        if reader is None or reader.broken:
            return None
        try:
            title, lines = reader.read()
        except Exception as exc:  # noqa: BLE001 - the tail is never worth a failed tick: said once, then left alone
            reader.broken = True
            errors.append(("log tail", f"{type(exc).__name__}: {exc}"))
            return None
        return (reader, title, lines) if title is not None or lines else None

    def close(self) -> None:
        self._closed.set()
        self._wanted.set()
        self.engine_poller.close()
        if self._tail is not None:
            self._tail.close()
