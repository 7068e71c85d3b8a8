"""What a switch that served says of itself: the time, the KV capacity vLLM logged, what was
verified, and a context that changed (a router told the old one routes by it until told again)."""

from __future__ import annotations

from rigctl.jsonio import DamagedFile
from rigctl.serve.bootwatch import BootResult
from rigctl.state import boots


def booted_context(profile: str | None) -> int | None:
    """The max_model_len the last boot of `profile` reported (its boot record); None unknown."""
    if profile is None:
        return None
    try:
        records = boots.read_all()
    except (OSError, DamagedFile):
        return None
    return next((r.max_model_len for r in reversed(records) if r.profile == profile), None)


def pool_words(result: BootResult) -> str:
    report = result.report
    if report.pool_tokens is None:
        return ""
    at = f" at {report.concurrency_len:,}" if report.concurrency_len else ""
    return f"; KV capacity{at}: {report.pool_tokens:,} tokens ({report.max_concurrency or 0:.2f}x)"


def switched_words(target: str, attempt: BootResult, context_before: int | None) -> str:
    verified = f"; {attempt.verification.summary()}" if attempt.verification else ""
    message = f"switched to {target} in {attempt.seconds:.1f} s" + pool_words(attempt) + verified
    after = attempt.report.concurrency_len
    if context_before and after and after != context_before:
        # a router told the old figure (rigctl rigs --litellm) routes by it until told again
        message += (
            f"; the context changed {context_before:,} -> {after:,}: a router routing by it needs its config again "
            "(rigctl rigs --litellm --out DIR, then restart the proxy)"
        )
    return message
