"""A bench plan: a control, its candidates, an order, a workload and a gate written before the run
(plan_file.py reads one from its file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rigctl.bench.metrics import Direction
from rigctl.bench.trace import TracedRequest
from rigctl.errors import BadInputError

ORDERS = ("ABA", "ABABA")  # each candidate between two controls, once or twice
ARRIVALS = ("burst", "interval", "poisson", "recorded")  # recorded: a trace's own arrival times
DATASET_FORMATS = ("sharegpt", "jsonl")
MIN_REQUESTS = 20


Role = Literal["control", "candidate"]  # an arm's part in a run


@dataclass(frozen=True)
class WorkloadKind:
    """A built-in workload's defaults; a plan may override any of them."""

    prompt_tokens: int
    max_tokens: int
    shared_prefix_tokens: int
    about: str


KINDS: dict[str, WorkloadKind] = {
    "chat-short": WorkloadKind(512, 256, 0, "short chat turns: ~512-token prompts, 256-token answers"),
    "agent-long": WorkloadKind(
        16384, 512, 12288, "coding-agent turns: a long shared prefix (the repo, the tools), a fresh tail, a medium answer"
    ),
    "prefill-heavy": WorkloadKind(8192, 16, 0, "long prompts, a few tokens out: what prefill and chunking cost"),
    "decode-heavy": WorkloadKind(128, 1024, 0, "short prompts, long answers: what decode speed is"),
}


@dataclass(frozen=True)
class Workload:
    kind: str
    concurrency: int
    requests: int | None  # one of requests / duration_s
    duration_s: float | None
    arrival: str
    interval_s: float | None
    rate_per_s: float | None
    prompt_tokens: int
    max_tokens: int
    shared_prefix_tokens: int
    seed: int
    warmup_requests: int
    temperature: float
    ignore_eos: bool
    timeout_s: float
    trace: str | None = None  # a capture's trace (as written in the plan), or "gateway": the door's recording
    window: str | None = None  # of the door's recording: "24h", or "START/END"
    dataset: str | None = None
    dataset_format: str | None = None
    speed: float = 1.0  # recorded arrivals compressed this many times


@dataclass(frozen=True)
class Guard:
    metric: str
    max_regression: float  # relative, in the metric's bad direction


@dataclass(frozen=True)
class Gate:
    metric: str
    direction: Direction  # which way the gate metric is better
    min_change: float  # relative
    guards: tuple[Guard, ...] = ()
    min_requests: int = MIN_REQUESTS  # an arm resting on fewer cannot promote


@dataclass(frozen=True)
class Quality:
    """The owner's own quality check, run after each arm against its server."""

    command: tuple[str, ...]
    timeout_s: float = 600.0


@dataclass(frozen=True)
class BenchPlan:
    name: str
    path: Path
    text: str  # the file as it was run
    description: str
    control: str
    candidates: tuple[str, ...]
    order: str
    workload: Workload
    gate: Gate
    warnings: tuple[str, ...] = field(default=())
    quality: Quality | None = None
    requests: tuple[TracedRequest, ...] = field(default=(), compare=False)  # the trace's or dataset's, read once
    runs: int = 0  # a calibration (`rigctl bench calibrate`): the control alone, this many times

    @property
    def candidate(self) -> str:
        """The first candidate (a plan of one candidate's only one)."""
        return self.candidates[0]

    def arms(self) -> list[tuple[Role, str]]:
        """(role, profile) per arm, in order: every candidate between two controls, once (ABA:
        A B A, or A B A C A with two) or twice (ABABA: A B A C A B A C A)."""
        if self.runs:
            return [("control", self.control)] * self.runs
        rounds = 2 if self.order == "ABABA" else 1
        out: list[tuple[Role, str]] = [("control", self.control)]
        for _ in range(rounds):
            for candidate in self.candidates:
                out += [("candidate", candidate), ("control", self.control)]
        return out


class PlanError(BadInputError):
    """A plan that cannot be run; every mistake in it, one per line."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))
