"""One redaction for every output path: CLI text and JSON, the TUI, logs shown, history, state.

Keyed by names, never by remembering values: an option or variable whose name says it
holds a secret (api_key, *token*, *secret*, *password*, HF_TOKEN, VLLM_API_KEY, ...) has
its value replaced by REDACTED wherever it appears, in an argv, an environment, a mapping
(a profile's tables) or a free-form line (vLLM's `non-default args: {...}` dump, a
process's command line, an `Authorization:` header).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

REDACTED = "***"


class _Later:
    """A pattern compiled at its first use: `rigctl status` imports this module and, with no server
    to show, redacts nothing; compiling these ten patterns at import was ~2.5 ms of its start
    (python -X importtime, the 2-core VM, idle)."""

    __slots__ = ("_compiled", "_flags", "_pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(self._pattern, self._flags)
        return getattr(self._compiled, name)


# "token" only as the last word of a name (hf_token, HF_TOKEN, --hf-token=): tokens,
# tokenizer, long_prefill_token_threshold and token ids are no secrets.
_SECRET_WORD = r"(?:api[_-]?keys?|secret|passw(?:or)?d|credential|token(?=$|[^a-z_-]))"
SECRET_NAME = _Later(_SECRET_WORD, re.IGNORECASE)
# Environment names are upper case by convention; any KEY or TOKEN part is a secret there.
_SECRET_ENV = _Later(r"(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)

# A flag naming a secret, with its value joined (--api-key=X) or in the next word(s).
_FLAG = _Later(rf"^--?(?:[A-Za-z0-9]+[-_])*{_SECRET_WORD}(?:[-_][A-Za-z0-9]+)*$", re.IGNORECASE)
_LINE_PATTERNS = (
    # Python or JSON mappings: 'api_key': ['a', 'b'] / "hf_token": "x" / 'api_key': None stays
    _Later(
        rf"""(?P<key>['"][A-Za-z0-9_.-]*{_SECRET_WORD}[A-Za-z0-9_.-]*['"]\s*:\s*)"""
        r"""(?P<value>\[[^\]]*\]|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""",
        re.IGNORECASE,
    ),
    # command lines: --api-key X, --api-key=X, --hf-token -x (a value may start with a dash)
    _Later(
        rf"(?P<key>(?<![\w-])--?(?:[A-Za-z0-9]+[-_])*{_SECRET_WORD}(?:[-_][A-Za-z0-9]+)*(?:=|\s+))"
        r"(?P<value>'[^']*'|\"[^\"]*\"|(?!--\w)\S+)",
        re.IGNORECASE,
    ),
    # environment assignments and key=value dumps: HF_TOKEN=x, api_key=x
    _Later(rf"(?P<key>(?<![\w-])[A-Za-z0-9_]*{_SECRET_WORD}[A-Za-z0-9_]*=)(?P<value>'[^']*'|\"[^\"]*\"|\S+)", re.IGNORECASE),
    _Later(r"(?P<key>\b(?:Authorization|Proxy-Authorization)\s*:\s*(?:Bearer|Basic|Token)?\s*)(?P<value>\S+)", re.IGNORECASE),
    _Later(r"(?P<key>\bBearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})"),
)


def is_secret_option(name: str) -> bool:
    """A vLLM option or profile key (snake or kebab case) whose value is a secret."""
    return bool(SECRET_NAME.search(name.lstrip("-")))


def is_secret_env(name: str) -> bool:
    return bool(_SECRET_ENV.search(name))


def redact_argv(argv: Iterable[str]) -> list[str]:
    """An argv with every secret option's values replaced: `--api-key a b`, `--api-key=a`,
    `--hf-token -x` (a value that starts with a dash is still a value)."""
    out: list[str] = []
    words = list(argv)
    index = 0
    while index < len(words):
        word = words[index]
        flag, equals, _ = word.partition("=")
        if equals and _FLAG.match(flag):
            out.append(f"{flag}={REDACTED}")
        elif _FLAG.match(word):
            out.append(word)
            # every value up to the next long flag: vLLM's --api-key takes several, and a
            # value may start with a single dash
            while index + 1 < len(words) and not words[index + 1].startswith("--"):
                index += 1
                out.append(REDACTED)
        else:
            out.append(word)
        index += 1
    return out


def redact_env(env: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (REDACTED if is_secret_env(k) and v not in (None, "") else v) for k, v in env.items()}


def redact_mapping(value: Any, secret: bool = False) -> Any:
    """A profile table (or any JSON-like value) with the values of secret-named keys replaced."""
    if isinstance(value, Mapping):
        return {k: redact_mapping(v, secret or is_secret_option(str(k)) or is_secret_env(str(k))) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_mapping(v, secret) for v in value]
    if secret and not isinstance(value, bool) and value is not None:
        return REDACTED
    return value


def redact_text(text: str) -> str:
    """A free-form line (a log line, a command line) with every secret-named value replaced."""
    if not _maybe_secret(text):
        return text
    for pattern in _LINE_PATTERNS:
        text = pattern.sub(_replace, text)
    return text


def redact_lines(lines: Sequence[str]) -> list[str]:
    return [redact_text(line) for line in lines]


def _replace(match: re.Match[str]) -> str:
    value = match.group("value")
    if value in ("None", "null", "True", "False", "true", "false", "[]", REDACTED) or value.startswith(REDACTED):
        return match.group(0)
    if value.startswith("["):
        inner = re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", f"'{REDACTED}'", value)
        return match.group("key") + inner
    quote = value[0] if value[0] in "'\"" and value[-1] == value[0] and len(value) > 1 else ""
    return match.group("key") + quote + REDACTED + quote


_CHEAP = _Later(r"key|token|secret|passw|credential|authoriz|bearer", re.IGNORECASE)


def _maybe_secret(text: str) -> bool:
    """A cheap test first: the dashboard's log tail passes every line through here."""
    return bool(_CHEAP.search(text))


def without_userinfo(url: str) -> str:
    """The URL as it is printed or written anywhere: a user:password in it is not."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
