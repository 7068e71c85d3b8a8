"""What a boot must pass before a switch counts as done (`[verify]`: config.toml's, overridden per
profile key by key), read and checked before anything stops: the owner's requests and known
answers from their JSONL files, and the tool-call flags the owner's apps rely on. Running the
checks against the new server is serve/verify.py's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rigctl import paths
from rigctl.config import Settings
from rigctl.errors import BadInputError
from rigctl.files import read_input_text
from rigctl.jsonio import loads_strict
from rigctl.profiles.schema import Profile
from rigctl.profiles.validate import verify_table_problems

REQUESTS_LIMIT = 4 * 1024 * 1024
ENDPOINTS = ("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/tokenize")
TOOL_FLAGS = ("--enable-auto-tool-choice", "--tool-call-parser")


@dataclass(frozen=True)
class OwnerRequest:
    where: str  # file:line
    endpoint: str
    body: dict[str, Any]
    status: int = 200


@dataclass(frozen=True)
class KnownAnswer:
    where: str  # file:line
    endpoint: str  # /v1/chat/completions or /v1/completions
    body: dict[str, Any]  # the prompt's part of the request: messages or prompt
    expect: str = ""  # the exact answer (stripped), or
    regex: str = ""  # a pattern the answer must match (re.search)
    max_tokens: int = 32

    def judge(self, answer: str) -> bool:
        return bool(re.search(self.regex, answer)) if self.regex else answer.strip() == self.expect.strip()


@dataclass(frozen=True)
class VerifySpec:
    chat: bool | None = None  # None: when the model has a chat template
    tools: bool = False
    min_context: int = 0
    requests: tuple[OwnerRequest, ...] = ()
    requests_file: str = ""
    timeout_s: float = 60.0
    declared: bool = False  # a [verify] table says what the apps need (config.toml or the profile)
    answers: tuple[KnownAnswer, ...] = ()
    answers_file: str = ""
    tools_streamed: bool = False
    min_acceptance: float = 0.0  # checked only where the profile drafts tokens (speculative decoding)
    speculative: bool = False

    def describe(self) -> list[str]:
        """The checks that will run, in words."""
        out = (
            ["a chat completion (1 token)" + ("" if self.chat else ", when the model has a chat template")]
            if self.chat is not False
            else []
        )
        if self.tools:
            out.append('a tool call (tools, tool_choice "auto")')
        if self.min_context:
            out.append(f"max_model_len at least {self.min_context:,}")
        if self.requests:
            out.append(f"{len(self.requests)} request(s) of {self.requests_file}")
        if self.answers:
            out.append(f"{len(self.answers)} known answer(s) of {self.answers_file}, greedy")
        if self.tools_streamed:
            out.append("a streamed tool call (a named tool_choice)")
        if self.min_acceptance and self.speculative:
            out.append(f"the drafts' acceptance at least {self.min_acceptance:.0%}")
        return out


def _json_lines(path: Path, what: str) -> Iterator[tuple[str, Any]]:
    """(file:line, value) of each line that is not blank or a # comment; BadInputError naming
    file:line for one that is not JSON."""
    text = read_input_text(path, REQUESTS_LIMIT, what)
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{number}"
        try:
            yield where, loads_strict(line)
        except (ValueError, RecursionError) as exc:
            raise BadInputError(f"{where}: not a JSON object ({str(exc)[:80]})") from None


def _read_requests(path: Path) -> tuple[OwnerRequest, ...]:
    """The owner's requests file, every line checked: BadInputError naming file:line."""
    out = []
    for where, entry in _json_lines(path, "verify requests file"):
        if not isinstance(entry, dict) or not isinstance(entry.get("body"), dict):
            raise BadInputError(f'{where}: expected {{"endpoint": "/v1/chat/completions", "body": {{...}}, "status": 200}}')
        endpoint = entry.get("endpoint", "/v1/chat/completions")
        if endpoint not in ENDPOINTS:
            raise BadInputError(f"{where}: endpoint {str(endpoint)[:60]!r} is not one of {', '.join(ENDPOINTS)}")
        status = entry.get("status", 200)
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
            raise BadInputError(f"{where}: status {str(status)[:20]} is not an HTTP status")
        out.append(OwnerRequest(where, endpoint, entry["body"], status))
    return tuple(out)


def _read_answers(path: Path) -> tuple[KnownAnswer, ...]:
    """The known-answers file, every line checked: BadInputError naming file:line."""
    out = []
    for where, entry in _json_lines(path, "verify answers file"):
        shape = '{"prompt": "...", "expect": "..."} or {"messages": [...], "regex": "..."}'
        if not isinstance(entry, dict):
            raise BadInputError(f"{where}: expected {shape}")
        prompt, messages = entry.get("prompt"), entry.get("messages")
        if isinstance(prompt, str) == isinstance(messages, list):
            raise BadInputError(f"{where}: give prompt (a string) or messages (a list), one of them: {shape}")
        expect, regex = entry.get("expect"), entry.get("regex")
        if isinstance(expect, str) == isinstance(regex, str):
            raise BadInputError(f"{where}: give expect (the exact answer) or regex, one of them: {shape}")
        if isinstance(regex, str):
            try:
                re.compile(regex)
            except re.error as exc:
                raise BadInputError(f"{where}: regex {regex[:40]!r}: {exc}") from None
        tokens = entry.get("max_tokens", 32)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 < tokens <= 4096:
            raise BadInputError(f"{where}: max_tokens {str(tokens)[:20]} is not a count of tokens (1 to 4096)")
        endpoint, body = (
            ("/v1/chat/completions", {"messages": messages})
            if isinstance(messages, list)
            else ("/v1/completions", {"prompt": prompt})
        )
        out.append(KnownAnswer(where, endpoint, body, expect or "", regex or "", tokens))
    return tuple(out)


def _verify_file(profile: Profile, key: str, configured: str) -> tuple[str, Path | None]:
    """A [verify] file as written (the profile's over config.toml's) and where it is: a relative
    path from the directory of the file that names it."""
    written, base = configured, paths.config_dir()
    if key in profile.verify:
        origin = profile.origin(f"verify.{key}")
        written, base = str(profile.verify[key]), origin.path.parent if origin else profile.path.parent
    if not written:
        return written, None
    path = Path(written).expanduser()
    return written, path if path.is_absolute() else base / path


def spec_for(settings: Settings, profile: Profile) -> VerifySpec:
    """config.toml's [verify] with the profile's over it; the requests file read and checked now
    (before anything stops). BadInputError naming the file for a bad value or a bad line."""
    problems = verify_table_problems(profile)
    if problems:
        raise BadInputError(str(problems[0]))
    mine = profile.verify
    requests_file, requests_path = _verify_file(profile, "requests", settings.verify_requests)
    requests = _read_requests(requests_path) if requests_path is not None else ()
    answers_file, answers_path = _verify_file(profile, "answers", settings.verify_answers)
    answers = _read_answers(answers_path) if answers_path is not None else ()
    return VerifySpec(
        chat=mine.get("chat", settings.verify_chat),
        tools=bool(mine.get("tools", settings.verify_tools)),
        min_context=int(mine.get("min_context", settings.verify_min_context)),
        requests=requests,
        requests_file=requests_file,
        timeout_s=float(mine.get("timeout_s", settings.verify_timeout)),
        declared=settings.verify_declared or bool(mine),
        answers=answers,
        answers_file=answers_file,
        tools_streamed=bool(mine.get("tools_streamed", settings.verify_tools_streamed)),
        min_acceptance=float(mine.get("min_acceptance", settings.verify_min_acceptance)),
        speculative=bool(profile.vllm.get("speculative_config")),
    )


def tool_flags_missing(argv: tuple[str, ...] | list[str]) -> list[str]:
    """The flags tool calling needs that a command line lacks."""
    return [flag for flag in TOOL_FLAGS if not any(word == flag or word.startswith(flag + "=") for word in argv)]


def _flag_value(argv: tuple[str, ...] | list[str], flag: str) -> str | None:
    for i, word in enumerate(argv):
        if word == flag:
            return argv[i + 1] if i + 1 < len(argv) else ""
        if word.startswith(flag + "="):
            return word.partition("=")[2]
    return None


def apps_lose(before: tuple[str, ...] | list[str], after: tuple[str, ...] | list[str]) -> list[str]:
    """What the apps in front of the rig lose when `after` replaces `before`: tool calling, a
    reasoning parser, a chat template the running command line had."""
    out = []
    if not tool_flags_missing(before) and tool_flags_missing(after):
        parser = _flag_value(before, "--tool-call-parser")
        out.append(
            f'tool calling (--enable-auto-tool-choice --tool-call-parser {parser}): apps that send tool_choice "auto" get HTTP 400'
        )
    for flag, what in (("--reasoning-parser", "the reasoning parser"), ("--chat-template", "the chat template")):
        had, has = _flag_value(before, flag), _flag_value(after, flag)
        if had and had != has:
            out.append(f"{what} {had}" + (f" (now {has})" if has else ""))
    return out
