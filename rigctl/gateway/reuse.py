"""How much of each prompt repeats the same client's earlier prompts: the share of the prompt vLLM's
prefix cache could have served, judged at the door before vLLM says what it served.

vLLM's hit rate alone cannot tell whose fault a collapse is. A client that changed its prompt's
beginning (a new system prompt with a date in it, tools in a new order) defeats any cache; a
client whose prompts kept their prefix while the hit rate fell lost its cache to the server (the
pool too small for the sessions, max-num-seqs evicting). The door sees the prompts, so it can
say which, per client.

Measured in characters of the prompt as the app sent it (a chat's tools and messages as JSON, a
completion's prompt): the server's template adds the same text around them on every request, so
a prefix kept in the app's text is a prefix kept in the tokens. Bounded: the last PREVIOUS prompts
of each of at most CLIENTS clients, each cut at PROMPT_LIMIT characters.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

PREVIOUS = 4  # earlier prompts of a client a prompt is compared with (an agent's turns, a few sessions)
CLIENTS = 64
PROMPT_LIMIT = 2_000_000  # characters of one prompt kept for the comparison (about 500k tokens)


def prompt_text(endpoint: str, body: dict[str, Any]) -> str | None:
    """The prompt as the app sent it, as one text whose prefix is the cache's prefix (None: not a
    generation request)."""
    if endpoint.endswith("/chat/completions"):
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        tools = body.get("tools")
        head = json.dumps(tools, ensure_ascii=False, sort_keys=False) if tools else ""
        return head + json.dumps(messages, ensure_ascii=False)
    if endpoint.endswith("/completions"):
        prompt = body.get("prompt")
        return prompt if isinstance(prompt, str) else None
    return None


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix, by halving with slice comparisons (C speed on
    prompts of 100k characters, where a loop over characters would take milliseconds)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low


@dataclass
class ClientReuse:
    """One client's prompts since the door opened: how many, their characters, how many of those
    repeated one of the client's earlier prompts from its beginning."""

    requests: int = 0
    prompt_chars: int = 0
    reused_chars: int = 0
    previous: deque[str] = field(default_factory=lambda: deque(maxlen=PREVIOUS), repr=False)

    def share(self) -> float | None:
        return self.reused_chars / self.prompt_chars if self.prompt_chars else None

    def to_json(self) -> dict[str, int]:
        return {"requests": self.requests, "prompt_chars": self.prompt_chars, "reused_chars": self.reused_chars}


class PrefixReuse:
    """Per client (the User-Agent's product), the share of its prompts that repeated its earlier ones."""

    def __init__(self) -> None:
        self.clients: dict[str, ClientReuse] = {}

    def add(self, client: str, text: str) -> int:
        """Count one prompt of `client`; the characters it shares with the client's closest earlier prompt."""
        seen = self.clients.get(client)
        if seen is None:
            if len(self.clients) >= CLIENTS:
                client = "other clients"
            seen = self.clients.setdefault(client, ClientReuse())
        text = text[:PROMPT_LIMIT]
        reused = max((common_prefix(text, before) for before in seen.previous), default=0)
        seen.requests += 1
        seen.prompt_chars += len(text)
        seen.reused_chars += reused
        seen.previous.append(text)
        return reused

    def to_json(self) -> dict[str, dict[str, int]]:
        return {name: seen.to_json() for name, seen in self.clients.items()}
