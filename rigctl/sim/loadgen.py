"""A light synthetic load for the demo: a few users sending requests that share long system
prompts (so the prefix cache has something to hit), with pauses in between.

It follows whatever server rigctl serves: the endpoint is read from the server record
before every request, so a switch simply moves the load to the new profile.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

from rigctl.engine.http_post import post_json

SYSTEM_PROMPTS = [
    "You are a careful coding agent. Follow the repository's conventions. " * 180,
    "You are a research assistant who cites sources and answers tersely. " * 200,
]
QUESTIONS = [
    "Refactor the parser.",
    "Why does the test fail?",
    "Summarise the paper.",
    "Plan the migration.",
    "Explain the KV cache.",
    "Write a unit test.",
]


class LoadGenerator:
    def __init__(self, endpoint: Callable[[], tuple[str, str] | None], users: int = 3, seed: int = 7) -> None:
        """`endpoint` returns (base URL, served model name) of what serves now, or None."""
        self.endpoint = endpoint
        self.users = users
        self._stop = threading.Event()
        self._rng = random.Random(seed)
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for n in range(self.users):
            thread = threading.Thread(target=self._user, args=(n,), name=f"demo-user-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()

    def _user(self, n: int) -> None:
        rng = random.Random(self._rng.random() + n)
        while not self._stop.wait(rng.uniform(0.5, 2.5)):
            target = self.endpoint()
            if target is None:
                continue
            url, model = target
            prompt = rng.choice(SYSTEM_PROMPTS) + rng.choice(QUESTIONS) + f" (user {n}, turn {rng.random():.4f})"
            body = {"model": model, "prompt": prompt, "max_tokens": rng.choice((64, 128, 256))}
            post_json(url, "/v1/completions", body, None, 120)  # switching or down: the next turn tries again
