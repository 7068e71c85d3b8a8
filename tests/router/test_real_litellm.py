"""Two rigs behind one address, on the field's router: the real LiteLLM proxy on the config
`rigctl rigs --litellm` wrote, and two simulated rigs behind their doors, one started at 32k
and one at 131k (seed 000's gateway: route by the context a request needs; the estimate only
steers; a slow generation is not a broken rig)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest

from tests.support.door_rig import DoorRig
from tests.support.litellm_proxy import MASTER_KEY, LiteLLMProxy, door_requests, generated, litellm_command, router_rigctl

pytestmark = pytest.mark.slow
WORDS = "cat "  # one token a word for LiteLLM's tokenizer and the simulator's (4 characters a token)


@dataclass
class Rigs:
    small: DoorRig
    large: DoorRig
    router: Path  # the router machine's home (its config.toml names both rigs)

    def write(self, *args: str) -> tuple[Path, str]:
        out = self.router / "litellm"
        done = router_rigctl(self.router, "rigs", "--litellm", "--out", str(out), *args)
        assert done.returncode == 0, done.stdout + done.stderr
        return out / "litellm.yaml", done.stdout

    def counts(self) -> tuple[int, int]:
        return door_requests(self.small), door_requests(self.large)


@pytest.fixture
def rigs(tmp_path: Path) -> Iterator[Rigs]:
    litellm_command()  # skips, saying why, where the proxy is not installed
    small, large = DoorRig(tmp_path / "small"), DoorRig(tmp_path / "large")
    try:
        small.add_profile("short", "max_model_len = 32768\n")
        for rig, profile in ((small, "short"), (large, "good")):
            rig.env["RIGCTL_SIM_SPEED"] = "20"  # a 40k prefill in about a second
            rig.open_door()
            done = rig.rigctl("switch", profile)
            assert done.returncode == 0, done.stdout + done.stderr
        router = tmp_path / "router"
        (router / "config" / "rigctl").mkdir(parents=True)
        (router / "config" / "rigctl" / "config.toml").write_text(
            f'[rigs.small]\nurl = "http://127.0.0.1:{small.port}"\n[rigs.large]\nurl = "http://127.0.0.1:{large.port}"\n'
        )
        yield Rigs(small, large, router)
    finally:
        small.cleanup()
        large.cleanup()


def test_routed_by_context_too_long_for_both_said_fast_and_a_switch_loses_nothing(rigs: Rigs, tmp_path: Path) -> None:
    """Seed 000's rules as close as LiteLLM comes (--largest-decides)."""
    config, said = rigs.write("--largest-decides")
    assert "wrote" in said and "start the proxy" in said
    assert MASTER_KEY not in config.read_text()
    proxy = LiteLLMProxy(config, tmp_path / "proxy.log")
    try:
        # a ~40k-token prompt goes to the 131k rig, every time
        before = rigs.counts()
        for _ in range(3):
            answer = proxy.chat(WORDS * 40_000)
            assert answer.status_code == 200, answer.text
            assert answer.json()["usage"]["prompt_tokens"] == 40_000
        after = rigs.counts()
        assert (after[0] - before[0], after[1] - before[1]) == (0, 3)

        # too long for both: the largest rig's vLLM refuses it with its own count, at once; nothing generated
        tokens = generated(rigs.small), generated(rigs.large)
        refused = proxy.chat(WORDS * 200_000, timeout=30)
        assert refused.status_code == 400, refused.text
        assert "maximum context length is 131072 tokens" in refused.text
        assert (generated(rigs.small), generated(rigs.large)) == tokens

        # a switch on the large rig while the apps (the OpenAI SDK, its defaults) talk to the router
        client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key=MASTER_KEY)
        errors: list[str] = []
        answered: list[int] = []
        stop = threading.Event()

        def app() -> None:
            while not stop.is_set():
                try:
                    reply = client.chat.completions.create(
                        model="qwen3.6-27b", messages=[{"role": "user", "content": WORDS * 40_000}], max_tokens=16
                    )
                    answered.append(reply.usage.completion_tokens if reply.usage else 0)
                except openai.OpenAIError as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")

        apps = [threading.Thread(target=app) for _ in range(3)]
        for thread in apps:
            thread.start()
        switched = rigs.large.rigctl("switch", "alt")
        stop.set()
        for thread in apps:
            thread.join(120)
        assert switched.returncode == 0, switched.stdout + switched.stderr
        assert errors == [] and len(answered) >= 3 and set(answered) == {16}
    finally:
        proxy.stop()


def test_litellms_own_estimate_refuses_and_a_slow_answer_is_not_retried(rigs: Rigs, tmp_path: Path) -> None:
    """LiteLLM's way (the default config): where its count says no rig holds a prompt, it refuses
    it itself, asking no rig - where seed 000's gateway sent it to the largest."""
    config, _ = rigs.write("--timeout", "3")
    proxy = LiteLLMProxy(config, tmp_path / "proxy.log")
    try:
        # LiteLLM's own count, every rig bounded: refused by the router, no rig asked
        before = rigs.counts()
        refused = proxy.chat(WORDS * 200_000, timeout=30)
        assert refused.status_code == 400 and "ContextWindowExceededError" in refused.text, refused.text
        assert rigs.counts() == before

        # a long answer not streamed, past the timeout: one 504 naming the fix, one request at one door
        slow = proxy.chat("hi", max_tokens=30_000, timeout=60)
        assert slow.status_code == 504, slow.text
        assert 'stream it (\\"stream\\": true)' in slow.text or 'stream it ("stream": true)' in slow.json()["error"]["message"]
        after = rigs.counts()
        assert sum(after) - sum(before) == 1, (before, after)
        # and the rig is not cooled down for it: the next request is served
        assert proxy.chat("hi").status_code == 200
    finally:
        proxy.stop()


def test_a_switch_that_changes_the_context_is_said_and_the_new_config_names_it(rigs: Rigs) -> None:
    rigs.write()
    rigs.large.add_profile("half", "max_model_len = 65536\n")
    switched = rigs.large.rigctl("switch", "half")
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert "the context changed 131,072 -> 65,536: a router routing by it needs its config again" in switched.stdout
    config, said = rigs.write()
    assert "large/qwen3.6-27b: max_model_len 131,072 -> 65,536" in said and "restart the LiteLLM proxy" in said
    text = config.read_text()
    assert "rigctl_max_model_len: 65536" in text
    _, again = rigs.write()
    assert "no rig's context changed" in again
