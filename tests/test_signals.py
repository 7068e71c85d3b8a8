"""The two-stage Ctrl-C every long command takes (rigctl/signals.two_stage_interrupt), with real
signals sent to this process: the first starts the orderly stop, the second leaves at once, and the
handlers in place before are put back."""

from __future__ import annotations

import os
import signal
import time

import pytest

from rigctl.signals import two_stage_interrupt


def delivered(sig: signal.Signals) -> None:
    os.kill(os.getpid(), sig)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the handler runs at the next bytecode of the main thread
        time.sleep(0.001)


def test_the_first_ctrl_c_stops_in_order_and_the_second_leaves() -> None:
    calls: list[str] = []

    def first() -> bool:
        calls.append("first")
        return True

    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), two_stage_interrupt(first):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert calls == ["first"]
        delivered(signal.SIGINT)
    assert calls == ["first"] and signal.getsignal(signal.SIGINT) is before


def test_nothing_to_stop_in_order_leaves_at_the_first() -> None:
    with pytest.raises(KeyboardInterrupt), two_stage_interrupt(lambda: False):
        delivered(signal.SIGINT)


def test_sigterm_counts_as_a_ctrl_c_only_when_asked() -> None:
    seen: list[int] = []

    def handler(signum: int, frame: object) -> None:
        seen.append(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        with two_stage_interrupt(lambda: True):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
        assert seen == [signal.SIGTERM]  # not taken: the handler before it got it
        with pytest.raises(KeyboardInterrupt), two_stage_interrupt(lambda: True, sigterm=True):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            delivered(signal.SIGTERM)
        assert seen == [signal.SIGTERM] and signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, previous)
