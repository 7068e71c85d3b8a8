"""Reading any vLLM log: boot phases with timestamps, the KV pool, and why a boot failed.

Handles the line formats of vLLM 0.6 (`# GPU blocks: N`), 0.7-0.27 (two capacity lines),
0.28 (one line), 0.30+ (device prefix), with or without the `(EngineCore pid=N)` prefix, the
logo 0.32+ prints in place of the version line, and the CPU build's KV budget lines.
Incremental: `BootLogReader.feed()` takes lines as they arrive while following a boot.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rigctl.redact import redact_text
from rigctl.vllm.bootfailure import Failure, classify_line, most_specific

__all__ = ["BootLogReader", "BootReport", "Failure", "Phase", "classify_line", "read_bootlog"]

_PREFIX = re.compile(r"^(?:\[[^\]]*\]\s*)?(?:\((?P<proc>[^)]*?)\s+pid=(?P<pid>\d+)\)\s*)?")
_HEAD = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)"
    r"(?:\.\d+)?\s+\[?(?P<src>[\w./-]+\.py:\d+)\]?\s*(?P<msg>.*)$"
)

KV_TOKENS = re.compile(r"(?:(?P<dev>[A-Za-z]+(?: \+ host)?) )?KV cache size: (?P<tokens>[\d,]+) tokens")
CONCURRENCY = re.compile(r"Maximum concurrency for (?P<len>[\d,]+) tokens per request: (?P<x>[\d.]+)x")
BLOCKS = re.compile(
    r"# (?P<dev>\w+) blocks: (?P<gpu>\d+)(?:, # CPU blocks: (?P<cpu>\d+))?"
    r"|num_gpu_blocks is: (?P<gpu2>\d+)"
)
AVAIL_KV = re.compile(
    r"Available KV cache memory: (?P<gib>[\d.]+) GiB"
    r"|the rest of the memory reserved for KV Cache is (?P<v0>[\d.]+) ?GiB"
    r"|(?P<how>Explicitly|Auto) set \((?P<cpu>[\d.]+)/[\d.]+\) GiB for KV cache"
)  # CPU build
EXPLICIT_KV = re.compile(r"'kv_cache_memory_bytes': \d|Explicitly set \([\d.]+/[\d.]+\) GiB for KV cache")
INIT_MODEL = re.compile(r"Initializing model took (?P<s>[\d.]+) seconds")
WEIGHTS = re.compile(r"Loading weights took (?P<s>[\d.]+) seconds")
CPU_COMPILE_START = re.compile(r"Warming up model for the compilation")
CPU_COMPILE_END = re.compile(r"Initial profiling/warmup run took")
BLOCK_SIZE = re.compile(r"(?:Setting attention block size to |block_size=)(?P<n>\d+)")
MODEL_LOADED = re.compile(
    r"Model loading took (?P<gib>[\d.]+) (?:GiB|GB)(?: memory)? and (?P<s>[\d.]+) seconds"
    r"|Loading model weights took (?P<gb>[\d.]+) GB"
)
COMPILED = re.compile(r"torch\.compile takes (?P<s>[\d.]+) s in total")
GRAPHS = re.compile(r"Graph capturing finished in (?P<s>[\d.]+) secs?, took (?P<gib>[\d.]+) GiB")
INIT_ENGINE = re.compile(
    r"init engine \(profile, create kv cache, warmup model\) took (?P<s>[\d.]+)"
    r" (?:s|seconds)(?: \(compilation: (?P<c>[\d.]+) s\))?"
)
SERVER = re.compile(r"Starting vLLM (?:API )?server(?: \d+)? on (?P<url>http://\S+)")

# (phase, label, pattern); the first match of each phase marks when it happened.
# 0.32+ print a logo whose lines end in "version X" and "model M" (the text line below only
# with VLLM_DISABLE_LOG_LOGO=1)
LOGO_MODEL = re.compile(r"[█▄▀]\s+model\s+(?P<model>\S+)\s*$")
PHASES: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (
        "start",
        "vLLM started",
        re.compile(
            r"vLLM (?:server|API server) version (?P<version>\S+?)(?:,|$| serving)"
            r"(?:.*serving model (?P<model>\S+))?"
            r"|[█▄▀]\s+version\s+(?P<logo>\d+\.\d+\S*)\s*$"
        ),
    ),
    ("args", "arguments parsed", re.compile(r"non-default args: |args: Namespace\(")),
    ("engine", "engine initialising", re.compile(r"Initializing a V[01] LLM engine(?: \(v(?P<version>[^)]+)\))?")),
    ("weights", "weights loaded", WEIGHTS),
    ("model", "model loaded", MODEL_LOADED),
    ("compile", "torch.compile done", re.compile(f"{COMPILED.pattern}|{CPU_COMPILE_END.pattern}")),
    ("kv_memory", "memory profiled", AVAIL_KV),
    ("kv_cache", "KV cache allocated", re.compile(r"KV cache size: [\d,]+ tokens|# \w+ blocks: \d+")),
    ("graphs", "CUDA graphs captured", GRAPHS),
    ("init", "engine ready", INIT_ENGINE),
    ("server", "API server starting", SERVER),
    ("ready", "application startup complete", re.compile(r"Application startup complete")),
)


def _n(text: str | None) -> int | None:
    return None if text is None else int(text.replace(",", ""))


@dataclass(frozen=True)
class Phase:
    name: str
    label: str
    seconds: float | None  # since the first timestamped line
    line: str


@dataclass
class BootReport:
    version: str | None = None
    model: str | None = None
    phases: list[Phase] = field(default_factory=list)
    kv_tokens: int | None = None
    kv_tokens_per_engine: list[int] = field(default_factory=list)
    kv_device: str | None = None
    max_concurrency: float | None = None
    concurrency_len: int | None = None
    gpu_blocks: int | None = None
    cpu_blocks: int | None = None
    block_size: int | None = None
    available_kv_gib: float | None = None
    model_load_gib: float | None = None
    model_load_seconds: float | None = None
    graph_capture_seconds: float | None = None
    graph_memory_gib: float | None = None
    init_engine_seconds: float | None = None
    compile_seconds: float | None = None
    kv_explicit: bool = False  # the KV size was given (kv_cache_memory_bytes, VLLM_CPU_KVCACHE_SPACE)
    server_url: str | None = None
    ready: bool = False
    failure: Failure | None = None
    failure_candidates: list[Failure] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)

    @property
    def pool_tokens(self) -> int | None:
        """The logged token figure, else blocks x block size (V0 logs only blocks; its default block is 16)."""
        if self.kv_tokens is not None:
            return self.kv_tokens
        if self.gpu_blocks is not None:
            return self.gpu_blocks * (self.block_size or 16)
        return None

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.name == name), None)

    def to_json(self) -> dict[str, object]:
        return dataclasses.asdict(self)


class BootLogReader:
    """Feed it lines; it keeps the report current.

    `started`: when the process started (epoch seconds), if known. Phase times then count from
    it, the silent seconds of imports before vLLM's first line included; without it they count
    from the first stamped line.
    """

    TAIL = 30

    def __init__(self, started: float | None = None) -> None:
        self.report = BootReport()
        self._t0: datetime | None = datetime.fromtimestamp(started) if started is not None else None
        self._t0_from_start = started is not None
        self._previous: datetime | None = None
        self._last: float | None = None
        self._seen: set[str] = set()
        self._compile_from: float | None = None
        self._init_model: float | None = None

    @staticmethod
    def split(line: str) -> tuple[str | None, str | None, str]:
        """(process, timestamp, message) of a vLLM log line; message is the whole line if unformatted."""
        rest = line.rstrip("\n")
        prefix = _PREFIX.match(rest)
        process = prefix.group("proc") if prefix else None
        rest = rest[prefix.end() :] if prefix else rest
        head = _HEAD.match(rest)
        if head:
            return process, head.group("ts"), head.group("msg")
        return process, None, rest

    def _seconds(self, stamp: str | None) -> float | None:
        """Seconds since the start; unstamped lines (uvicorn's) take the last stamp."""
        if stamp is None:
            return self._last
        # vLLM omits the year: read it in a leap year, so 02-29 parses, and a stamp far
        # earlier than the one before it is after New Year, a year on.
        try:
            moment = datetime.strptime(f"{_LEAP_YEAR}-{stamp}", "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return self._last  # not a date after all (13-45 ...): no time for this line
        reference = self._previous or self._t0
        if reference is not None:
            moment = _in_year(moment, reference.year)
            if moment < reference - _HALF_YEAR:
                moment = _in_year(moment, moment.year + 1)
        if (
            self._t0_from_start
            and self._previous is None
            and self._t0 is not None
            and abs((moment - self._t0).total_seconds()) > 600
        ):
            self._t0 = None  # the log's clock is not ours (a container in UTC): count from its first line
        self._previous = moment
        if self._t0 is None:
            self._t0 = moment
        # stamps have whole seconds, the start has not: never before the start
        self._last = max(0.0, (moment - self._t0).total_seconds())
        return self._last

    def feed(self, line: str) -> Phase | None:
        r = self.report
        if not line.strip():
            return None
        shown = redact_text(line.rstrip())  # what a report quotes never carries a key
        r.tail = ([*r.tail, shown])[-self.TAIL :]
        _, stamp, message = self.split(shown)
        seconds = self._seconds(stamp)
        self._numbers(message, seconds)
        failure = classify_line(message, r.kv_explicit)
        if failure and not (failure.cause == "signal" and r.ready):  # after ready, a signal is a stop
            r.failure_candidates.append(dataclasses.replace(failure, line=shown))  # the line as logged
            r.failure = most_specific(r.failure_candidates)
        if r.model is None and (m := LOGO_MODEL.search(message)):
            r.model = m.group("model")
        for name, label, pattern in PHASES:
            match = pattern.search(message)
            if not match:
                continue
            if name in ("start", "engine"):
                found = match.groupdict()
                r.version = r.version or found.get("version") or found.get("logo")
                r.model = r.model or found.get("model")
            if name == "ready":
                r.ready = True
            if name not in self._seen:
                self._seen.add(name)
                phase = Phase(name, label, seconds, shown)
                r.phases.append(phase)
                return phase
        return None

    def _numbers(self, message: str, seconds: float | None) -> None:
        r = self.report
        if m := KV_TOKENS.search(message):
            tokens = int(m.group("tokens").replace(",", ""))
            r.kv_tokens_per_engine.append(tokens)
            r.kv_tokens = r.kv_tokens or tokens
            r.kv_device = m.group("dev") or "GPU"
        if m := CONCURRENCY.search(message):
            r.concurrency_len, r.max_concurrency = _n(m.group("len")), float(m.group("x"))
        if m := BLOCKS.search(message):
            r.gpu_blocks, r.cpu_blocks = int(m.group("gpu") or m.group("gpu2")), _n(m.group("cpu")) or r.cpu_blocks
        if m := AVAIL_KV.search(message):
            r.available_kv_gib = float(m.group("gib") or m.group("v0") or m.group("cpu"))
        if EXPLICIT_KV.search(message):
            r.kv_explicit = True
        if m := BLOCK_SIZE.search(message):
            r.block_size = int(m.group("n"))
        if m := MODEL_LOADED.search(message):
            r.model_load_gib = float(m.group("gib") or m.group("gb"))
            r.model_load_seconds = float(m.group("s")) if m.group("s") else r.model_load_seconds
        if m := INIT_MODEL.search(message):
            self._init_model = float(m.group("s"))
        if (m := WEIGHTS.search(message)) and r.model_load_seconds is None and self._init_model is not None:
            r.model_load_seconds = round(self._init_model + float(m.group("s")), 3)  # the CPU build's two steps
        if m := GRAPHS.search(message):
            r.graph_capture_seconds, r.graph_memory_gib = float(m.group("s")), float(m.group("gib"))
        if m := INIT_ENGINE.search(message):
            r.init_engine_seconds = float(m.group("s"))
            r.compile_seconds = float(m.group("c")) if m.group("c") else r.compile_seconds
        if m := COMPILED.search(message):
            r.compile_seconds = r.compile_seconds or float(m.group("s"))
        if CPU_COMPILE_START.search(message):
            self._compile_from = seconds
        if CPU_COMPILE_END.search(message) and self._compile_from is not None and seconds is not None:
            r.compile_seconds = r.compile_seconds or seconds - self._compile_from  # whole seconds: stamps
        if m := SERVER.search(message):
            r.server_url = m.group("url")


_LEAP_YEAR = 2000
_HALF_YEAR = timedelta(days=182)


def _in_year(moment: datetime, year: int) -> datetime:
    try:
        return moment.replace(year=year)
    except ValueError:  # 29 February of a year that has none: the next day
        return moment.replace(year=year, month=3, day=1)


def read_bootlog(lines: Iterable[str]) -> BootReport:
    reader = BootLogReader()
    for line in lines:
        reader.feed(line)
    return reader.report
