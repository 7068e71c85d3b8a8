"""Reading any vLLM log: boot phases with timestamps, the KV pool, and why a boot failed.

Handles the line formats of vLLM 0.6 (`# GPU blocks: N`), 0.7-0.27 (two capacity lines),
0.28 (one line), 0.30+ (device prefix), with or without the `(EngineCore pid=N)` prefix.
Incremental: `BootLogReader.feed()` takes lines as they arrive while following a boot.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rigctl.redact import redact_text

_PREFIX = re.compile(r"^(?:\[[^\]]*\]\s*)?(?:\((?P<proc>[^)]*?)\s+pid=(?P<pid>\d+)\)\s*)?")
_HEAD = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+(?P<ts>\d\d-\d\d \d\d:\d\d:\d\d)"
                   r"(?:\.\d+)?\s+\[?(?P<src>[\w./-]+\.py:\d+)\]?\s*(?P<msg>.*)$")

KV_TOKENS = re.compile(r"(?:(?P<dev>[A-Za-z]+(?: \+ host)?) )?KV cache size: (?P<tokens>[\d,]+) tokens")
CONCURRENCY = re.compile(r"Maximum concurrency for (?P<len>[\d,]+) tokens per request: (?P<x>[\d.]+)x")
BLOCKS = re.compile(r"# (?P<dev>\w+) blocks: (?P<gpu>\d+)(?:, # CPU blocks: (?P<cpu>\d+))?"
                    r"|num_gpu_blocks is: (?P<gpu2>\d+)")
AVAIL_KV = re.compile(r"Available KV cache memory: (?P<gib>[\d.]+) GiB"
                      r"|the rest of the memory reserved for KV Cache is (?P<v0>[\d.]+) ?GiB")
BLOCK_SIZE = re.compile(r"(?:Setting attention block size to |block_size=)(?P<n>\d+)")
MODEL_LOADED = re.compile(r"Model loading took (?P<gib>[\d.]+) (?:GiB|GB)(?: memory)? and (?P<s>[\d.]+) seconds"
                          r"|Loading model weights took (?P<gb>[\d.]+) GB")
COMPILED = re.compile(r"torch\.compile takes (?P<s>[\d.]+) s in total")
GRAPHS = re.compile(r"Graph capturing finished in (?P<s>[\d.]+) secs?, took (?P<gib>[\d.]+) GiB")
INIT_ENGINE = re.compile(r"init engine \(profile, create kv cache, warmup model\) took (?P<s>[\d.]+)"
                         r" (?:s|seconds)(?: \(compilation: (?P<c>[\d.]+) s\))?")
SERVER = re.compile(r"Starting vLLM (?:API )?server(?: \d+)? on (?P<url>http://\S+)")

# (phase, label, pattern); the first match of each phase marks when it happened.
PHASES: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("start", "vLLM started", re.compile(r"vLLM (?:server|API server) version (?P<version>\S+?)(?:,|$| serving)"
                                         r"(?:.*serving model (?P<model>\S+))?")),
    ("args", "arguments parsed", re.compile(r"non-default args: |args: Namespace\(")),
    ("engine", "engine initialising", re.compile(r"Initializing a V[01] LLM engine(?: \(v(?P<version>[^)]+)\))?")),
    ("weights", "weights loaded", re.compile(r"Loading weights took (?P<s>[\d.]+) seconds")),
    ("model", "model loaded", MODEL_LOADED),
    ("compile", "torch.compile done", COMPILED),
    ("kv_memory", "memory profiled", AVAIL_KV),
    ("kv_cache", "KV cache allocated", re.compile(r"KV cache size: [\d,]+ tokens|# \w+ blocks: \d+")),
    ("graphs", "CUDA graphs captured", GRAPHS),
    ("init", "engine ready", INIT_ENGINE),
    ("server", "API server starting", SERVER),
    ("ready", "application startup complete", re.compile(r"Application startup complete")),
)
PHASE_ORDER = [p[0] for p in PHASES]


@dataclass(frozen=True)
class Failure:
    cause: str  # max_model_len | foreign_vram | oom_load | oom | no_kv_memory | unknown_flag | port_in_use | ...
    summary: str  # one line for the owner
    line: str  # the log line that explains it
    suggestion: str | None = None
    max_model_len: int | None = None
    estimated_max_len: int | None = None


def _n(text: str | None) -> int | None:
    return None if text is None else int(text.replace(",", ""))


FAILURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("max_model_len", re.compile(r"To serve at least one request with the models?'s max seq len \((?P<len>\d+)\)")),
    ("max_model_len", re.compile(r"The model's max seq len \((?P<len>\d+)\) is larger than the maximum number of "
                                 r"tokens that can be stored in KV cache \((?P<est>\d+)\)")),
    ("foreign_vram", re.compile(r"Free memory on device (?P<dev>\S+) \((?P<free>[\d.]+)/(?P<total>[\d.]+) GiB\) on "
                                r"startup is less than desired GPU memory utilization \((?P<gmu>[\d.]+), "
                                r"(?P<want>[\d.]+) GiB\)")),
    ("oom_load", re.compile(r"Failed to load model - not enough GPU memory")),
    ("oom_sampler", re.compile(r"CUDA out of memory occurred when warming up sampler")),
    ("oom", re.compile(r"OutOfMemoryError: CUDA out of memory|CUDA out of memory\. Tried to allocate")),
    ("no_kv_memory", re.compile(r"No available memory for the cache blocks|Cannot auto-fit max_model_len")),
    ("unknown_flag", re.compile(r"error: (?:unrecognized arguments: (?P<args>.*)|ambiguous option: (?P<amb>.*))")),
    ("port_in_use", re.compile(r"\[Errno 98\] Address already in use|address already in use")),
    ("gpu_count", re.compile(r"World size \((?P<need>\d+)\) is larger than the number of available GPUs")),
    ("unsupported_gpu", re.compile(r"no kernel image is available|not supported on compute capability")),
    ("bad_quantization", re.compile(r"Unknown quantization method: (?P<q>\S+)")),
    ("crash", re.compile(r"Fatal Python error: (?P<what>.*)|Segmentation fault|core dumped")),
    ("engine_core", re.compile(r"Engine core initialization failed|EngineCore failed to start")),
)


def classify_line(message: str) -> Failure | None:
    for cause, pattern in FAILURES:
        match = pattern.search(message)
        if match:
            return _explain(cause, match, message)
    return None


def _explain(cause: str, m: re.Match[str], line: str) -> Failure:
    g = m.groupdict()
    if cause == "max_model_len":
        est = g.get("est") or (re.search(r"estimated maximum model length is (\d+)", line) or [None, None])[1]
        length, estimate = _n(g.get("len")), _n(est)
        hint = f"set max_model_len to {estimate:,} or less, or raise gpu_memory_utilization" if estimate else \
            "lower max_model_len or raise gpu_memory_utilization"
        return Failure(cause, f"max_model_len {length:,} needs more KV cache than fits"
                       + (f"; vLLM estimates {estimate:,} fits" if estimate else ""), line, hint, length, estimate)
    if cause == "foreign_vram":
        return Failure(cause, f"{g['dev']} had {g['free']} of {g['total']} GiB free at start, but "
                       f"gpu_memory_utilization {g['gmu']} wants {g['want']} GiB: other processes hold VRAM", line,
                       "stop the processes holding VRAM (rigctl status lists them) or lower gpu_memory_utilization")
    table = {
        "oom_load": ("CUDA out of memory while loading the weights", "use a smaller quantisation, raise "
                     "tensor_parallel_size, or lower gpu_memory_utilization"),
        "oom_sampler": ("CUDA out of memory while warming up the sampler", "lower max_num_seqs"),
        "oom": ("CUDA out of memory", "lower max_num_batched_tokens or gpu_memory_utilization, or set "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
        "no_kv_memory": ("no memory left for the KV cache after weights and activations",
                         "raise gpu_memory_utilization or use smaller weights"),
        "port_in_use": ("the port is already in use", "stop what listens there or change port"),
        "gpu_count": (f"the profile needs {g.get('need')} GPUs and fewer are visible",
                      "lower tensor/data parallel sizes or check CUDA_VISIBLE_DEVICES"),
        "unsupported_gpu": ("a kernel does not support this GPU", "choose another quantization or kv_cache_dtype"),
        "bad_quantization": (f"vLLM does not know quantization {g.get('q')}", "check the quantization value"),
        "crash": ("the engine process crashed", None),
        "engine_core": ("the engine core failed to start", None),
    }
    if cause == "unknown_flag":
        args = (g.get("args") or g.get("amb") or "").strip()
        return Failure(cause, f"vLLM does not accept {args}", line, "remove or rename the option "
                       "(`rigctl profile validate` names removed options)")
    summary, hint = table[cause]
    return Failure(cause, summary, line, hint)


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
    """Feed it lines; it keeps the report current."""

    TAIL = 30

    def __init__(self) -> None:
        self.report = BootReport()
        self._t0: datetime | None = None
        self._previous: datetime | None = None
        self._last: float | None = None
        self._seen: set[str] = set()

    @staticmethod
    def split(line: str) -> tuple[str | None, str | None, str]:
        """(process, timestamp, message) of a vLLM log line; message is the whole line if unformatted."""
        rest = line.rstrip("\n")
        prefix = _PREFIX.match(rest)
        process = prefix.group("proc") if prefix else None
        rest = rest[prefix.end():] if prefix else rest
        head = _HEAD.match(rest)
        if head:
            return process, head.group("ts"), head.group("msg")
        return process, None, rest

    def _seconds(self, stamp: str | None) -> float | None:
        """Seconds since the first stamped line; unstamped lines (uvicorn's) take the last stamp."""
        if stamp is None:
            return self._last
        # vLLM omits the year: read it in a leap year, so 02-29 parses, and a stamp far
        # earlier than the one before it is after New Year, a year on.
        try:
            moment = datetime.strptime(f"{_LEAP_YEAR}-{stamp}", "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return self._last  # not a date after all (13-45 ...): no time for this line
        if self._previous is not None:
            years = self._previous.year - _LEAP_YEAR
            moment = _in_year(moment, _LEAP_YEAR + years)
            if moment < self._previous - _HALF_YEAR:
                moment = _in_year(moment, moment.year + 1)
        self._previous = moment
        if self._t0 is None:
            self._t0 = moment
        self._last = (moment - self._t0).total_seconds()
        return self._last

    def feed(self, line: str) -> Phase | None:
        r = self.report
        if not line.strip():
            return None
        shown = redact_text(line.rstrip())  # what a report quotes never carries a key
        r.tail = (r.tail + [shown])[-self.TAIL:]
        _, stamp, message = self.split(shown)
        seconds = self._seconds(stamp)
        self._numbers(message)
        failure = classify_line(message)
        if failure:
            r.failure_candidates.append(dataclasses.replace(failure, line=shown))  # the line as logged
            r.failure = _most_specific(r.failure_candidates)
        for name, label, pattern in PHASES:
            match = pattern.search(message)
            if not match:
                continue
            if name in ("start", "engine"):
                r.version = r.version or match.groupdict().get("version")
                r.model = r.model or match.groupdict().get("model")
            if name == "ready":
                r.ready = True
            if name not in self._seen:
                self._seen.add(name)
                phase = Phase(name, label, seconds, shown)
                r.phases.append(phase)
                return phase
        return None

    def _numbers(self, message: str) -> None:
        r = self.report
        if m := KV_TOKENS.search(message):
            tokens = _n(m.group("tokens"))
            r.kv_tokens_per_engine.append(tokens)
            r.kv_tokens = r.kv_tokens or tokens
            r.kv_device = m.group("dev") or "GPU"
        if m := CONCURRENCY.search(message):
            r.concurrency_len, r.max_concurrency = _n(m.group("len")), float(m.group("x"))
        if m := BLOCKS.search(message):
            r.gpu_blocks, r.cpu_blocks = int(m.group("gpu") or m.group("gpu2")), _n(m.group("cpu")) or r.cpu_blocks
        if m := AVAIL_KV.search(message):
            r.available_kv_gib = float(m.group("gib") or m.group("v0"))
        if m := BLOCK_SIZE.search(message):
            r.block_size = int(m.group("n"))
        if m := MODEL_LOADED.search(message):
            r.model_load_gib = float(m.group("gib") or m.group("gb"))
            r.model_load_seconds = float(m.group("s")) if m.group("s") else r.model_load_seconds
        if m := GRAPHS.search(message):
            r.graph_capture_seconds, r.graph_memory_gib = float(m.group("s")), float(m.group("gib"))
        if m := INIT_ENGINE.search(message):
            r.init_engine_seconds = float(m.group("s"))
            r.compile_seconds = float(m.group("c")) if m.group("c") else r.compile_seconds
        if m := COMPILED.search(message):
            r.compile_seconds = r.compile_seconds or float(m.group("s"))
        if m := SERVER.search(message):
            r.server_url = m.group("url")


_LEAP_YEAR = 2000
_HALF_YEAR = timedelta(days=182)


def _in_year(moment: datetime, year: int) -> datetime:
    try:
        return moment.replace(year=year)
    except ValueError:  # 29 February of a year that has none: the next day
        return moment.replace(year=year, month=3, day=1)


def _most_specific(candidates: list[Failure]) -> Failure:
    """The engine-core and crash lines follow the real cause; prefer the earliest specific one."""
    generic = ("engine_core", "crash", "oom")
    for failure in candidates:
        if failure.cause not in generic:
            return failure
    for cause in ("oom", "crash", "engine_core"):
        for failure in candidates:
            if failure.cause == cause:
                return failure
    return candidates[0]


def read_bootlog(lines: Iterable[str]) -> BootReport:
    reader = BootLogReader()
    for line in lines:
        reader.feed(line)
    return reader.report
