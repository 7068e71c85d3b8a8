"""A boot is done when the owner's apps work, not when vLLM answers: the checks `[verify]` asks
for (config.toml, overridden per profile key by key), run against the new server before a
switch counts as done. A check that fails is a failed boot (the switch rolls back), with vLLM's
own answer quoted.

    chat = true        one chat completion, 1 token (default: when the model has a chat template)
    tools = true       one request with tools and tool_choice "auto" (vLLM answers 400 without
                       --enable-auto-tool-choice and --tool-call-parser)
    min_context = N    /v1/models says max_model_len >= N
    requests = "F"     the owner's own requests, in order: JSONL of {"endpoint", "body", "status"}
    answers = "F"      prompts with known answers, sent greedy (temperature 0, seed 0): JSONL of
                       {"prompt" or "messages", "expect" (the exact text) or "regex", "max_tokens"};
                       a wrong answer fails the boot, quoting both (a 200 with wrong output: a broken
                       all-reduce, a bad quantization)
    tools_streamed = true
                       a streamed chat with a tool named in tool_choice (vLLM forces the call
                       through structured output, so any model must make it): no tool call in the
                       stream fails the boot (a streaming tool parser that drops it)
    min_acceptance = R for a profile with speculative decoding: the accepted share of the drafted
                       tokens over the verification's own requests (from /metrics) at least R
    timeout_s = S      for all of it

Every prompt carries a fresh token, so no verification request shares a prefix block with any
other request (a bench's cold-cache proof counts on it); the engine's prefix counters after the
checks are kept as the boot's baseline.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any, Literal

from rigctl.engine.client import EngineClient, EngineHTTPError
from rigctl.engine.http_post import post_json
from rigctl.engine.prom import ExpositionError
from rigctl.serve.verify_spec import KnownAnswer, VerifySpec


@dataclass(frozen=True)
class Check:
    name: Literal["chat", "tools", "min_context", "request", "answer", "tools_streamed", "acceptance"]
    ok: bool
    detail: str
    skipped: bool = False


@dataclass(frozen=True)
class Verification:
    checks: tuple[Check, ...] = ()
    skipped: str = ""  # why nothing was checked (--no-verify)
    # a cold cache's baseline: the prompt tokens the checks sent (their answers' usage; vLLM counts
    # each scheduled request's prompt in prefix_cache_queries) and the engine's hits once they were done
    prompt_tokens: int = 0
    prefix_hits: float | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failure(self) -> Check | None:
        return next((c for c in self.checks if not c.ok), None)

    def summary(self) -> str:
        if self.skipped:
            return f"not verified ({self.skipped})"
        passed = [c.name for c in self.checks if c.ok and not c.skipped]
        skipped = [c.detail for c in self.checks if c.skipped]
        failed = self.failure
        if failed is not None:
            return f"verification failed: {failed.detail}"
        text = f"verified: {', '.join(passed)}" if passed else "verified: nothing was asked"
        return text + "".join(f"; {s}" for s in skipped)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "skipped": self.skipped or None,
            "summary": self.summary(),
            "seconds": self.seconds,
            "checks": [asdict(c) for c in self.checks],
            "prompt_tokens": self.prompt_tokens,
            "prefix_hits": self.prefix_hits,
        }


def not_verified(why: str) -> Verification:
    return Verification(skipped=why)


@dataclass
class _Poster:
    """The verification's POSTs (engine/http_post.py), within its one deadline."""

    base_url: str
    api_key: str | None
    deadline: float
    prompt_tokens: int = 0  # of every answer's usage

    def post(self, endpoint: str, body: dict[str, Any]) -> tuple[int, str]:
        """(status, vLLM's message or the answer's text); status 0 when nothing answered in time."""
        status, text = self.exchange(endpoint, body)
        return status, (_message(text) if status else text)

    def exchange(self, endpoint: str, body: dict[str, Any]) -> tuple[int, str]:
        """(status, the answer's whole text, up to 1 MiB); status 0 and why when nothing answered in time."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            return 0, "no time left in [verify] timeout_s"
        status, text = post_json(self.base_url, endpoint, body, self.api_key, left)
        if status:
            self.prompt_tokens += _prompt_tokens(text)
        return status, text


def _prompt_tokens(text: str) -> int:
    try:
        usage = json.loads(text).get("usage") or {}
        tokens = usage.get("prompt_tokens", 0)
    except (ValueError, AttributeError):
        return 0
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else 0


def _message(text: str) -> str:
    """vLLM's error message out of its JSON answer, else the start of the text."""
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:300]
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            return str(error)[:300]
    return text.strip()[:300]


def run_verify(base_url: str, api_key: str | None, model: str, spec: VerifySpec, max_model_len: int | None) -> Verification:
    """The checks of `spec` against the server at `base_url`, in order; stops at the first that fails."""
    started = time.monotonic()
    poster = _Poster(base_url, api_key, started + spec.timeout_s)
    nonce = uuid.uuid4().hex  # no block of these prompts is in any other request's prefix
    checks: list[Check] = []
    drafts_before = _drafts(base_url, api_key) if spec.min_acceptance and spec.speculative else None

    def chat(content: str, **extra: Any) -> tuple[int, str]:
        return poster.post(
            "/v1/chat/completions",
            {"model": model, "max_tokens": 1, "temperature": 0, "messages": [{"role": "user", "content": content}], **extra},
        )

    if spec.chat is not False:
        status, said = chat(f"rigctl verify {nonce} chat: answer ok")
        if status == 200:
            checks.append(Check("chat", True, "a chat completion answered"))
        elif spec.chat is None and status == 400 and "chat template" in said.lower():
            checks.append(
                Check("chat", True, f"the model has no chat template (vLLM said: {said}): chat is not verified", skipped=True)
            )
        else:
            checks.append(Check("chat", False, f"the new profile does not answer a chat completion: {_said(status, said)}"))
    if spec.tools and all(c.ok for c in checks):
        tool = {
            "type": "function",
            "function": {"name": "rigctl_probe", "description": "answers ok", "parameters": {"type": "object", "properties": {}}},
        }
        status, said = chat(f"rigctl verify {nonce} tools: call rigctl_probe", tools=[tool], tool_choice="auto")
        checks.append(
            Check("tools", True, "a tool call was accepted")
            if status == 200
            else Check("tools", False, f"the new profile refuses tool calls: {_said(status, said)}")
        )
    if spec.min_context and all(c.ok for c in checks):
        served = max_model_len or 0
        checks.append(
            Check(
                "min_context",
                served >= spec.min_context,
                f"serves a context of {served:,} tokens"
                + ("" if served >= spec.min_context else f", and the apps need {spec.min_context:,} ([verify] min_context)"),
            )
        )
    for request in spec.requests:
        if not all(c.ok for c in checks):
            break
        body = {"model": model, **request.body}
        status, said = poster.post(request.endpoint, body)
        ok = status == request.status
        checks.append(
            Check(
                "request",
                ok,
                f"{request.where}: POST {request.endpoint} answered {status}"
                + ("" if ok else f", expected {request.status}: vLLM said: {said}"),
            )
        )
    for known in spec.answers:
        if not all(c.ok for c in checks):
            break
        checks.append(_known_answer(poster, model, known))
    if spec.tools_streamed and all(c.ok for c in checks):
        checks.append(_streamed_tool_call(poster, model, nonce))
    if spec.min_acceptance and spec.speculative and all(c.ok for c in checks):
        checks.append(_acceptance(poster, model, nonce, drafts_before, spec.min_acceptance, base_url, api_key))
    hits = None
    try:
        with EngineClient(base_url, api_key, timeout=2.0) as client:
            hits = client.metrics(time.time()).counter("prefix_hits")
    except (EngineHTTPError, ExpositionError):
        pass
    return Verification(tuple(checks), "", poster.prompt_tokens, hits, round(time.monotonic() - started, 2))


def _drafts(base_url: str, api_key: str | None) -> tuple[float, float] | None:
    """(accepted, drafted) tokens of speculative decoding so far, from /metrics (None: not read)."""
    try:
        with EngineClient(base_url, api_key, timeout=2.0) as client:
            snap = client.metrics(time.time())
    except (EngineHTTPError, ExpositionError):
        return None
    return snap.counter("spec_accepted_tokens") or 0.0, snap.counter("spec_draft_tokens") or 0.0


def _answer_text(text: str) -> str | None:
    try:
        data = json.loads(text)
        choice = data["choices"][0]
        content = choice["message"]["content"] if "message" in choice else choice["text"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else ""


def _known_answer(poster: _Poster, model: str, known: KnownAnswer) -> Check:
    body = {"model": model, **known.body, "max_tokens": known.max_tokens, "temperature": 0, "seed": 0}
    status, text = poster.exchange(known.endpoint, body)
    if status != 200:
        return Check(
            "answer", False, f"{known.where}: answered {status or 'nothing'}: {_said(status, _message(text) if status else text)}"
        )
    answer = _answer_text(text)
    if answer is None:
        return Check("answer", False, f"{known.where}: the answer has no text: {text.strip()[:200]}")
    shown = answer.strip()[:200]
    if known.judge(answer):
        return Check("answer", True, f"{known.where}: answered as known")
    wanted = f"does not match /{known.regex}/" if known.regex else f"is not the known answer {known.expect.strip()[:200]!r}"
    return Check("answer", False, f"{known.where}: the new profile answered {shown!r}, which {wanted} (greedy, seed 0)")


def _streamed_tool_call(poster: _Poster, model: str, nonce: str) -> Check:
    tool = {
        "type": "function",
        "function": {
            "name": "rigctl_probe",
            "description": "says that the call arrived",
            "parameters": {"type": "object", "properties": {"said": {"type": "string"}}, "required": ["said"]},
        },
    }
    body = {
        "model": model,
        "messages": [{"role": "user", "content": f"rigctl verify {nonce} streamed tools: call rigctl_probe"}],
        "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": "rigctl_probe"}},
        "stream": True,
        "max_tokens": 64,
        "temperature": 0,
    }
    status, text = poster.exchange("/v1/chat/completions", body)
    if status != 200:
        return Check(
            "tools_streamed",
            False,
            f"the new profile refuses a streamed tool call: {_said(status, _message(text) if status else text)}",
        )
    calls = 0
    for line in text.splitlines():
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        try:
            delta = json.loads(line[5:])["choices"][0].get("delta") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            continue
        calls += bool(delta.get("tool_calls"))
    if calls:
        return Check("tools_streamed", True, "a streamed tool call arrived")
    return Check(
        "tools_streamed",
        False,
        "a streamed chat with tool_choice naming rigctl_probe answered 200 with no tool call in its stream "
        "(the streaming tool parser dropped it; the apps that stream tools would get nothing)",
    )


def _acceptance(
    poster: _Poster, model: str, nonce: str, before: tuple[float, float] | None, floor: float, base_url: str, api_key: str | None
) -> Check:
    """Greedy tokens enough for drafts, then the accepted share of the drafts made since `before`."""
    poster.exchange(
        "/v1/completions",
        {"model": model, "prompt": f"rigctl verify {nonce}: count from 1 to 40:", "max_tokens": 48, "temperature": 0},
    )
    after = _drafts(base_url, api_key)
    if before is None or after is None:
        return Check("acceptance", True, "the drafts' acceptance could not be read from /metrics: not verified", skipped=True)
    accepted, drafted = after[0] - before[0], after[1] - before[1]
    if drafted <= 0:
        return Check("acceptance", True, "no token was drafted during the verification: acceptance not verified", skipped=True)
    rate = accepted / drafted
    detail = (
        f"the drafts' acceptance over the verification's requests was {rate:.1%} ({accepted:.0f} of {drafted:.0f} drafted tokens)"
    )
    if rate >= floor:
        return Check("acceptance", True, detail)
    return Check(
        "acceptance",
        False,
        f"{detail}, below [verify] min_acceptance {floor:.0%}: every step pays for drafts that seldom land",
    )


def _said(status: int, said: str) -> str:
    return f"vLLM said: {said}" if status else said
