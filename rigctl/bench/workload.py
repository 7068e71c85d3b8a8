"""What a workload sends: prompts by request number, arrival times, warm-up prompts.

Deterministic from the plan's seed, so every arm sends exactly the same requests. The
measured prompts share nothing with the warm-up ones (each starts with its own tag), and,
unless the workload has a shared prefix, nothing with each other: vLLM's own warm-up
resends the first prompt, which makes its first measured request a prefix-cache hit.
Lengths are approximate (about four characters a token); what the server counted is what
gets recorded.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rigctl.bench.plan import Workload
from rigctl.bench.trace import TracedRequest

CHARS_PER_TOKEN = 4
_WORDS = (
    "the of and to in is that for it as with was on be by at this have from or one had not but what all were when "
    "we there can an your which their said if do will each about how up out them then she many some so these would "
    "other into has more her two like him see time could no make than first been its who now people my made over "
    "did down only way find use may water long little very after words called just where most know get through back "
    "much before go good new write our used me man too any day same right look think also around another came come "
    "work three word must because does part even place well such here take why things help put years different away "
    "again off went old number great tell men say small every found still between name should home big give air "
    "line set own under read last never us left end along while might next sound below saw something thought both "
    "few those always looked show large often together asked house world going want school important until form "
    "food keep children feet land side without boy once animals life enough took sometimes four head above kind "
    "began almost live page got earth need far hand high year mother light parts country father let night following "
    "picture being study second eyes soon times story boys since white days ever paper hard near sentence better best "
    "across during today others however sure means knew try told young miles sun ways thing whole hear example heard "
    "several change answer room sea against top turned learn point city play toward five using himself usually"
).split()


@dataclass(frozen=True)
class Prompt:
    index: int
    text: str  # a completion's prompt (for a request body given whole: what it is about, for the record)
    max_tokens: int
    endpoint: str = "/v1/completions"
    body: dict[str, Any] | None = field(default=None, compare=False)  # a captured request, sent as it was


def _words(rng: random.Random, tokens: int) -> str:
    target = tokens * CHARS_PER_TOKEN
    parts: list[str] = []
    size = 0
    while size < target:
        word = rng.choice(_WORDS)
        parts.append(word)
        size += len(word) + 1
    return " ".join(parts)


class Prompts:
    """Prompt number i of a workload, the same every time it is asked for."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        shared = workload.shared_prefix_tokens
        self.prefix = "Shared context: " + _words(random.Random(f"prefix-{workload.seed}"), shared) + "\n" if shared else ""

    def measured(self, index: int) -> Prompt:
        w = self.workload
        tail = w.prompt_tokens - w.shared_prefix_tokens
        rng = random.Random(f"request-{w.seed}-{index}")
        return Prompt(index, f"{self.prefix}Request {w.seed}-{index}: {_words(rng, tail)}", w.max_tokens)

    def warmup(self, index: int) -> Prompt:
        """Same shape as the measured prompts, sharing no block with them (nor their prefix)."""
        w = self.workload
        rng = random.Random(f"warmup-{w.seed}-{index}")
        return Prompt(-1 - index, f"Warm-up {w.seed}-{index}: {_words(rng, w.prompt_tokens)}", min(w.max_tokens, 64))


class Replay(Prompts):
    """The owner's requests (a trace's or a dataset's), each sent as it was, the model named by the
    arm's served name; warm-ups are synthetic, sharing no block with them."""

    def __init__(self, workload: Workload, requests: Sequence[TracedRequest]) -> None:
        super().__init__(workload)
        self.requests = list(requests)

    def measured(self, index: int) -> Prompt:
        request = self.requests[index]
        body = {k: v for k, v in request.body.items() if k not in ("stream", "stream_options")}
        return Prompt(index, request.summary(), request.max_tokens(), request.endpoint, body)


def prompts_for(workload: Workload, requests: Sequence[TracedRequest] = ()) -> Prompts:
    return Replay(workload, requests) if requests else Prompts(workload)


def request_count(workload: Workload, requests: Sequence[TracedRequest] = ()) -> int | None:
    """How many requests an arm sends (None: as many as fit duration_s)."""
    return len(requests) if requests else workload.requests


def arrivals(workload: Workload, requests: Sequence[TracedRequest] = ()) -> Iterator[float]:
    """Seconds after the start at which each measured request is due, in request order;
    endless for a duration_s workload (the caller stops at the duration). Recorded: the trace's
    own gaps, compressed `speed` times."""
    if requests:
        first = requests[0].t
        for request in requests:
            if workload.arrival == "recorded":
                yield (request.t - first) / workload.speed
            elif workload.arrival == "burst":
                yield 0.0
            else:
                break
        if workload.arrival in ("recorded", "burst"):
            return
    rng = random.Random(f"arrival-{workload.seed}")
    count = request_count(workload, requests)
    due = 0.0
    index = 0
    while count is None or index < count:
        if workload.arrival == "interval":
            due = index * float(workload.interval_s or 0.0)
        elif workload.arrival == "poisson" and index:
            due += rng.expovariate(float(workload.rate_per_s or 1.0))
        yield due  # burst: everything is due at once; the concurrency cap spaces it
        index += 1
