"""An action's ending as the journal keeps it (state/journal.py), from what its drain and its
verification found: written by the process that acted."""

from __future__ import annotations

import time

from rigctl.gateway.apps_seen import AppsSeen
from rigctl.serve.drain import Drained
from rigctl.serve.verify import Verification
from rigctl.state.journal import Action, Ending, SwitchStatus


def ending_of(
    action: Action,
    status: SwitchStatus,
    target: str,
    began: float,
    drained: Drained | None,
    verification: Verification | None,
    apps: AppsSeen | None = None,
    apps_refused: str | None = None,
) -> Ending:
    """The ending of an action that began at `began`, with what its drain and verification found."""
    checked = verification is not None and not verification.skipped
    failure = verification.failure if verification is not None else None
    known = drained is not None and drained.known
    now = time.time()
    return Ending(
        when=now,
        action=action,
        status=status,
        target=target,
        seconds=round(now - began, 3),
        # vLLM's gauges see no request end: only the front door counts the finished ones
        finished=apps.finished if apps is not None else None,
        cut=(apps.cut + apps.bypass_cut) if apps is not None else (drained.left if known and drained is not None else None),
        running=drained.at_start if known and drained is not None else None,
        held=apps.held if apps is not None else None,
        held_longest_s=apps.longest_s if apps is not None else None,
        refused=apps.refused if apps is not None else None,
        verified=verification.ok if checked and verification is not None else None,
        verify_failed=f"{failure.name}: {failure.detail}" if failure is not None else None,
        apps_refused=apps_refused,
    )
