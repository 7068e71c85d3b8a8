"""rigctl's exposition parser against prometheus_client's, on three sizes, in one run.

Run:  python benchmarks/bench_metrics_parse.py [--rounds 20]
Prints milliseconds per parse (best of rounds, process CPU time) and the ratio, and checks
that both parsers return the same samples (name, labels, value; `_created` excluded).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/: figures
from figures import figure
from prometheus_client.parser import text_string_to_metric_families

from rigctl.engine.prom import _LABEL_CACHE, parse
from rigctl.sim.exposition import render
from rigctl.sim.stats import Stats


def vllm_sized() -> str:
    """What the simulator serves for a TP=2 MTP profile after some traffic (vLLM 0.33's families)."""
    stats = Stats(engines=1, max_model_len=131072, spec=True)
    for i in range(500):
        for name in (
            "time_to_first_token_seconds",
            "inter_token_latency_seconds",
            "e2e_request_latency_seconds",
            "request_time_per_output_token_seconds",
            "request_queue_time_seconds",
        ):
            stats.observe(name, (i % 37) / 40, 0)
        stats.observe("request_prompt_tokens", i * 13, 0)
        stats.count("generation_tokens", 7, 0)
        stats.count_by("spec_decode_num_accepted_tokens_per_pos", "position", str(i % 3), 1, 0)
    cache = {"block_size": "800", "kv_cache_size_tokens": "646391", "kv_cache_max_concurrency": "4.93"}
    return render(stats, "qwen3.6-27b", cache, time.time())


def big(target: int = 1_200_000) -> str:
    text, n = [], 0
    base = vllm_sized()
    while sum(map(len, text)) < target:
        text.append(base.replace('model_name="qwen3.6-27b"', f'model_name="replica-{n}"'))
        n += 1
    return "".join(text)


def ours(text: str) -> set[tuple[str, tuple[tuple[str, str], ...], float]]:
    return {(name, tuple(sorted(labels)), value) for name, samples in parse(text).samples.items() for labels, value in samples}


def theirs(text: str) -> set[tuple[str, tuple[tuple[str, str], ...], float]]:
    return {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.name.endswith("_created")
    }


def best_ms(fn, text: str, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.process_time()
        fn(text)
        times.append(time.process_time() - start)
    return min(times) * 1000


def same(a: set, b: set) -> bool:
    norm = lambda s: {(n, labels, "nan" if math.isnan(v) else v) for n, labels, v in s}  # noqa: E731
    return norm(a) == norm(b)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    sample = (Path(__file__).resolve().parent.parent / "tests/fixtures/vllm/metrics_0.8.x_1.prom").read_text()
    cases = [("small (vLLM 0.8 sample)", sample), ("vLLM 0.33-sized (simulator)", vllm_sized()), ("1 MB+ (many replicas)", big())]
    print("warm: the label cache holds the previous scrape's label sets, as at 1 Hz polling; cold: emptied first")
    print(
        f"{'exposition':<30}{'bytes':>11}{'samples':>9}{'warm ms':>9}{'cold ms':>9}{'prom_client ms':>16}"
        f"{'ratio warm/cold':>17}  same"
    )
    for key, (label, text) in zip(("small", "vllm033", "big"), cases, strict=True):
        a, b = ours(text), theirs(text)
        warm = best_ms(parse, text, args.rounds)
        cold = best_ms(lambda t: (_LABEL_CACHE.clear(), parse(t)), text, args.rounds)
        other = best_ms(lambda t: list(text_string_to_metric_families(t)), text, max(3, args.rounds // 4))
        print(
            f"{label:<30}{len(text):>11,}{len(a):>9,}{warm:>9.3f}{cold:>9.3f}{other:>16.3f}"
            f"{other / warm:>8.1f}x/{other / cold:.1f}x  {'yes' if same(a, b) else 'NO'}"
        )
        figure(f"parse.{key}.size", f"{len(text) / 1e6:.1f} MB" if len(text) > 1e6 else f"{len(text) / 1e3:.0f} KB")
        figure(f"parse.{key}.rigctl", f"{warm:.2f} ms" if warm < 10 else f"{warm:.0f} ms")
        figure(f"parse.{key}.prometheus_client", f"{other:.1f} ms" if other < 100 else f"{other:.0f} ms")
        figure(f"parse.{key}.ratio", f"{other / warm:.1f}x")


if __name__ == "__main__":
    main()
