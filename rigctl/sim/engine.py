"""The simulated engine: continuous batching over a KV pool, in real time.

Requests wait, get admitted up to max_num_seqs while the pool has room, prefill in chunks
(minus what the prefix cache already holds, in whole blocks), then decode at a rate that
follows the profile: tensor parallel over the rig's link, async scheduling, MTP with a
per-position acceptance like a real Qwen MTP head. When the pool runs out, the newest
request is preempted. Every counter and histogram vLLM exports is kept here.
"""

from __future__ import annotations

import hashlib
import itertools
import queue
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from rigctl.sim.speeds import async_gain
from rigctl.sim.stats import Stats

STEP = 0.02  # seconds of real time per scheduler step
ACCEPTANCE = (0.74, 0.47, 0.31, 0.19, 0.10, 0.06, 0.03, 0.02)  # per draft position (MTP on Qwen, measured)


@dataclass(frozen=True)
class Speed:
    """Rates for one engine replica."""

    decode_tps: float  # single-stream decode tokens/s without speculation
    prefill_tps: float
    spec_tokens: int = 0
    async_scheduling: bool = False
    batch_slowdown: float = 0.05  # a stream's speed / (1 + batch_slowdown x (b - 1) ** batch_power)
    batch_power: float = 1.0
    mtp_step_cost: float = 1.25  # per drafted token, in plain decode steps (the card's: speeds.CARDS)
    mtp_batch_cost: float = 0.04  # per drafted token and extra running sequence
    acceptance_scale: float = 1.0  # how well the drafts match this workload (RIGCTL_SIM_ACCEPTANCE)


@dataclass
class Request:
    rid: str
    engine: int
    prompt_tokens: int
    blocks: list[str]
    max_tokens: int
    arrival: float
    out: queue.Queue[tuple[int, str | None]] = field(default_factory=queue.Queue)
    admitted_at: float | None = None
    first_token_at: float | None = None
    last_token_at: float | None = None
    prefilled: int = 0
    cached: int = 0
    generated: int = 0
    credit: float = 0.0
    done: bool = False


def prompt_tokens(text: str) -> int:
    """The simulator's tokenizer: ~4 characters a token."""
    return max(1, (len(text) + 3) // 4)


def prompt_blocks(text: str, block_tokens: int) -> tuple[int, list[str]]:
    """Token count (prompt_tokens) and the hash chain of whole blocks."""
    tokens = prompt_tokens(text)
    chars = block_tokens * 4
    blocks, digest = [], hashlib.blake2b(digest_size=8)
    for start in range(0, (tokens // block_tokens) * chars, chars):
        digest.update(text[start : start + chars].encode())
        blocks.append(digest.hexdigest())
    return tokens, blocks


class EngineReplica:
    """One DP rank: its pool, prefix cache, queues and stats."""

    def __init__(
        self,
        index: int,
        pool_tokens: int,
        block_tokens: int,
        max_seqs: int,
        chunk: int,
        speed: Speed,
        stats: Stats,
        rng: random.Random,
    ) -> None:
        self.index = index
        self.pool = pool_tokens
        self.block = block_tokens
        self.max_seqs = max_seqs
        self.chunk = chunk
        self.speed = speed
        self.stats = stats
        self.rng = rng
        self.waiting: list[Request] = []
        self.running: list[Request] = []
        self.cache: OrderedDict[str, None] = OrderedDict()  # prefix-cache blocks, least recently used first
        # --kv-offloading-size: blocks evicted from the GPU pool kept in host RAM (vLLM's native
        # offload), found again at admission past the GPU's hits: loaded, not recomputed
        self.offload: OrderedDict[str, None] = OrderedDict()
        self.offload_tokens = 0
        self.token_bytes = 0
        self.busy = 0.0
        self.saturated = False  # this step's prefill fills the step (long prompts): no async gain

    def held(self) -> int:
        return sum(r.prompt_tokens + r.generated for r in self.running)

    def usage(self) -> float:
        return min(1.0, self.held() / self.pool) if self.pool else 0.0

    def _admit(self, now: float) -> None:
        while self.waiting and len(self.running) < self.max_seqs:
            request = self.waiting[0]
            if self.held() + request.prompt_tokens + request.generated > self.pool:
                return  # waiting for capacity
            self.waiting.pop(0)
            hits = 0
            for block in request.blocks:
                if block not in self.cache:
                    break
                self.cache.move_to_end(block)
                hits += 1
            local = hits
            if self.offload_tokens:
                queried = request.prompt_tokens - hits * self.block
                for block in request.blocks[hits:]:
                    if block not in self.offload:
                        break
                    self.offload.move_to_end(block)
                    hits += 1
                external = (hits - local) * self.block
                self.stats.count("external_prefix_cache_queries", max(0, queried), self.index)
                self.stats.count("external_prefix_cache_hits", external, self.index)
                self.stats.count("kv_offload_load_bytes", external * self.token_bytes, self.index)
            # the last prompt token is always recomputed, as in vLLM
            request.cached = min(hits * self.block, request.prompt_tokens - 1)
            self.stats.count("prefix_cache_queries", request.prompt_tokens, self.index)
            self.stats.count("prefix_cache_hits", min(local * self.block, request.prompt_tokens - 1), self.index)
            if request.admitted_at is None:
                request.admitted_at = now
                self.stats.observe("request_queue_time_seconds", now - request.arrival, self.index)
            request.prefilled = request.cached
            self.running.append(request)

    def _preempt_if_full(self) -> None:
        while self.running and self.held() > self.pool:
            victim = self.running.pop()  # the newest: vLLM preempts by recompute, last in first out
            victim.prefilled = 0
            self.waiting.insert(0, victim)
            self.stats.count("num_preemptions", 1, self.index)

    def step(self, now: float, dt: float) -> None:
        self._admit(now)
        # A step filled by a long prompt's prefill is bound by the GPU; async scheduling, which hides
        # the CPU's scheduling of the next step behind this one, gains on the other steps, short
        # prefills included: the 3090 owner's median TTFT fell 1.55 -> 1.16 s at six concurrent short
        # requests, and nothing changed with long prompts.
        prefill_left = sum(r.prompt_tokens - r.prefilled for r in self.running if r.prefilled < r.prompt_tokens)
        self.saturated = prefill_left >= self.chunk
        gain = async_gain(len(self.running), self.saturated) if self.speed.async_scheduling else 1.0
        decoding = [r for r in self.running if r.prefilled >= r.prompt_tokens]
        rate = self._per_stream_rate(len(decoding), self.saturated)
        prefill_rate = self.speed.prefill_tps * gain
        if decoding and prefill_left > 0 and rate > 0:
            # vLLM packs a prefill chunk into the decoders' step (chunked prefill). A decode step is
            # bound by reading the weights, a prefill chunk by compute: the step lasts the longer of
            # the two, so a short prompt rides along, and while long prompts prefill every decoding
            # stream waits on their chunks: the 3090 owner's TPOT of 385 ms with three 40k prompts
            # in flight, against 18 ms alone (prefills competing with decodes)
            chunk = min(self.chunk, prefill_left)
            mixed_step = max(1 / rate, chunk / prefill_rate)
            rate, prefill_rate = 1 / mixed_step, chunk / mixed_step
        prefill_budget = min(self.chunk, prefill_rate * dt)
        for request in self.running:
            if request.prefilled < request.prompt_tokens and prefill_budget > 0:
                take = min(prefill_budget, request.prompt_tokens - request.prefilled)
                request.prefilled += int(take) or 1
                prefill_budget -= take
                if request.prefilled >= request.prompt_tokens:
                    computed = request.prompt_tokens - request.cached
                    self.stats.count("prompt_tokens", request.prompt_tokens, self.index)
                    self.stats.count_by("prompt_tokens_by_source", "source", "local_compute", computed, self.index)
                    self.stats.count_by("prompt_tokens_by_source", "source", "local_cache_hit", request.cached, self.index)
                    self.stats.count("prompt_tokens_cached", request.cached, self.index)
                    self.stats.observe("request_prefill_time_seconds", now - (request.admitted_at or now), self.index)
        for request in decoding:
            request.credit += rate * dt
            while request.credit >= 1 and not request.done:
                tokens = self._draft_round() if self.speed.spec_tokens else 1
                tokens = min(tokens, request.max_tokens - request.generated)
                request.credit -= 1  # one forward step, which yields 1 + accepted drafts tokens
                self._emit(request, tokens, now)
        self._preempt_if_full()
        self.busy = 1.0 if self.running else 0.0
        self.report()

    def report(self) -> None:
        """The gauges /metrics shows (a stalled engine still reports its queue)."""
        self.stats.gauge("num_requests_running", len(self.running), self.index)
        self.stats.gauge("num_requests_waiting", len(self.waiting), self.index)
        self.stats.gauge("kv_cache_usage_perc", self.usage(), self.index)

    def _per_stream_rate(self, batch: int, prefilling: bool) -> float:
        """Forward steps per second for one decoding stream (speeds.py: the owners' figures)."""
        speed = self.speed
        rate = speed.decode_tps * (async_gain(batch, prefilling) if speed.async_scheduling else 1.0)
        if speed.spec_tokens:
            # drafting and verifying make each step longer (on 3090s more than the drafts win back at
            # the acceptance owners saw; on a 4090 pair with graphs far less), and more so in a
            # large batch, where decode stops being memory-bound
            k = speed.spec_tokens
            rate /= 1 + speed.mtp_step_cost * k + speed.mtp_batch_cost * k * max(0, batch - 1)
        slowdown: float = 1 + speed.batch_slowdown * float(max(0, batch - 1)) ** speed.batch_power
        return rate / slowdown

    def _draft_round(self) -> int:
        k = self.speed.spec_tokens
        accepted = 0
        for position in range(k):
            chance = (
                ACCEPTANCE[position] / ACCEPTANCE[position - 1]
                if position
                else min(1.0, ACCEPTANCE[0] * self.speed.acceptance_scale)
            )
            if self.rng.random() < chance:
                accepted += 1
                self.stats.count_by("spec_decode_num_accepted_tokens_per_pos", "position", str(position), 1, self.index)
            else:
                break
        self.stats.count("spec_decode_num_drafts", 1, self.index)
        self.stats.count("spec_decode_num_draft_tokens", k, self.index)
        self.stats.count("spec_decode_num_accepted_tokens", accepted, self.index)
        return 1 + accepted

    def _emit(self, request: Request, tokens: int, now: float) -> None:
        if request.first_token_at is None:
            request.first_token_at = now
            self.stats.observe("time_to_first_token_seconds", now - request.arrival, self.index)
        elif request.last_token_at is not None:
            self.stats.observe("inter_token_latency_seconds", now - request.last_token_at, self.index)
        request.last_token_at = now
        request.generated += tokens
        self.stats.count("generation_tokens", tokens, self.index)
        request.out.put((tokens, None))
        if request.generated >= request.max_tokens:
            self._finish(request, "length", now)

    def _finish(self, request: Request, reason: str, now: float) -> None:
        request.done = True
        if request in self.running:
            self.running.remove(request)
        for block in request.blocks:  # freed blocks stay cached until evicted
            self.cache[block] = None
            self.cache.move_to_end(block)
        while len(self.cache) * self.block > self.pool:
            evicted, _ = self.cache.popitem(last=False)
            if self.offload_tokens and evicted not in self.offload:
                self.offload[evicted] = None  # stored to host RAM as the GPU pool lets it go
                self.stats.count("kv_offload_store_bytes", self.block * self.token_bytes, self.index)
                while len(self.offload) * self.block > self.offload_tokens:
                    self.offload.popitem(last=False)
        s = self.stats
        s.count_by("request_success", "finished_reason", reason, 1, self.index)
        s.observe("e2e_request_latency_seconds", now - request.arrival, self.index)
        s.observe("request_prompt_tokens", request.prompt_tokens, self.index)
        s.observe("request_generation_tokens", request.generated, self.index)
        if request.first_token_at is not None:
            s.observe("request_decode_time_seconds", now - request.first_token_at, self.index)
            s.observe("request_inference_time_seconds", now - (request.admitted_at or now), self.index)
            if request.generated > 1:
                s.observe(
                    "request_time_per_output_token_seconds", (now - request.first_token_at) / (request.generated - 1), self.index
                )
        request.out.put((0, reason))


class EngineSim:
    """All DP replicas behind one API server, stepped by one background thread."""

    def __init__(
        self, replicas: list[EngineReplica], clock: Callable[[], float] = time.monotonic, stall_after: float | None = None
    ) -> None:
        self.replicas = replicas
        # RIGCTL_SIM_STALL_AFTER: after this many seconds it takes requests and schedules none,
        # /health still 200 (the homelab failure: hours "healthy" with a queue and nothing admitted)
        self.stall_after = stall_after
        self.stats = replicas[0].stats  # one Stats for every replica, keyed by engine index
        self.clock = clock
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sim-engine", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def submit(self, text: str, max_tokens: int) -> Request:
        with self.lock:
            replica = min(self.replicas, key=lambda r: len(r.running) + len(r.waiting))
            tokens, blocks = prompt_blocks(text, replica.block)
            request = Request(
                rid=f"cmpl-{next(self._ids):08x}",
                engine=replica.index,
                prompt_tokens=tokens,
                blocks=blocks,
                max_tokens=max(1, max_tokens),
                arrival=self.clock(),
            )
            replica.waiting.append(request)
        return request

    def abort(self, request: Request) -> None:
        with self.lock:
            replica = self.replicas[request.engine]
            if request in replica.waiting:
                replica.waiting.remove(request)
            if not request.done:
                replica._finish(request, "abort", self.clock())

    def load(self) -> float:
        """How busy the GPUs are, 0..1 (the simulated rig shows it as utilisation and power)."""
        return max((r.busy for r in self.replicas), default=0.0)

    def _run(self) -> None:
        began = last = self.clock()
        while not self._stop.wait(STEP):
            now = self.clock()
            if self.stall_after is not None and now - began >= self.stall_after:
                last = now
                with self.lock:  # stalled: nothing admitted, nothing decoded, requests pile up
                    for replica in self.replicas:
                        replica.report()
                continue
            with self.lock:
                for replica in self.replicas:
                    replica.step(now, now - last)
            last = now
