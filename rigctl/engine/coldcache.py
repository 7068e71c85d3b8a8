"""Is the prefix cache cold: one rule for the bench's cold check before every arm and for `rigctl
status` (the owners' rule before a comparison). The engine's own counters decide, less what the
boot's verification sent (its prompts carry a fresh token, so they share no block with anyone's)."""

from __future__ import annotations

from dataclasses import dataclass

from rigctl.engine.metrics import EngineSnapshot


@dataclass(frozen=True)
class ColdCheck:
    cold: bool | None  # None: the engine exports no prefix-cache counters, so it cannot be proven
    queries: float | None  # at the restart
    hits: float | None
    external_hits: float | None = None  # in the measured window, from a KV connector's cache
    baseline: tuple[float, float] | None = None  # (queries, hits) the boot's own verification made

    def describe(self) -> str:
        if self.cold is None:
            return "unproven: the engine exports no vllm:prefix_cache_queries/hits counters"
        if self.external_hits:
            return (
                f"WARM: {self.external_hits:,.0f} prompt tokens hit an external KV cache (a KV connector's) "
                f"that outlived the restart"
            )
        own = self.baseline or (0.0, 0.0)
        if self.cold:
            return (
                "cold: prefix_cache_queries 0 and hits 0 after the restart"
                if not self.baseline
                else f"cold: after the restart only the boot's verification ({own[0]:,.0f} prompt tokens, "
                f"{own[1]:,.0f} hits) had reached the cache"
            )
        extra = f" beyond the verification's {own[0]:,.0f}" if self.baseline else ""
        return (
            f"WARM: after the restart the engine had already seen {(self.queries or 0) - own[0]:,.0f} prompt "
            f"tokens{extra} ({(self.hits or 0) - own[1]:,.0f} hit the prefix cache): something else sent "
            f"requests"
        )


def cold_check(
    after_restart: EngineSnapshot | None,
    before: EngineSnapshot | None = None,
    after: EngineSnapshot | None = None,
    baseline: tuple[float, float] | None = None,
) -> ColdCheck:
    """Cold: the engine's own counters say no prompt token was seen between the restart and
    the first scrape but the boot's own verification (`baseline`, its counters once it was done:
    its prompts carry a fresh token, so they share no block with the workload), and no measured
    one came out of an external (connector) cache."""
    if after_restart is None:
        return ColdCheck(None, None, None)
    queries = after_restart.counter("prefix_queries")
    hits = after_restart.counter("prefix_hits")
    if queries is None and hits is None:
        return ColdCheck(None, None, None)
    external = None
    if before is not None and after is not None:
        start, end = before.counter("external_prefix_hits"), after.counter("external_prefix_hits")
        external = end - start if start is not None and end is not None and end >= start else None
    own_queries, own_hits = baseline or (0.0, 0.0)
    cold = (queries or 0.0) == own_queries and (hits or 0.0) == own_hits and not external
    return ColdCheck(cold, queries, hits, external, baseline)


def verification_baseline(boot: dict[str, object]) -> tuple[float, float] | None:
    """The prefix counters the boot's verification left (its boot record), when it ran and said."""
    verification = boot.get("verification")
    if not isinstance(verification, dict) or verification.get("skipped"):
        return None
    # its own prompt tokens (nothing else may have been queried) and the hits once it was done
    queries, hits = verification.get("prompt_tokens"), verification.get("prefix_hits")
    if isinstance(queries, (int, float)) and isinstance(hits, (int, float)):
        return float(queries), float(hits)
    if isinstance(queries, (int, float)) and not queries:
        return 0.0, 0.0  # nothing was sent (or nothing scheduled): the cache must be untouched
    return None
