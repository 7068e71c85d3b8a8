"""The switch journal: every serving action's ending, one line each, written by the switch and
the stop themselves (real simulator boots, real files); damaged lines skipped; bounded."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from rigctl.serve import switch as transaction
from rigctl.serve.context import ServeContext
from rigctl.serve.drain import Drained
from rigctl.serve.ending import ending_of
from rigctl.serve.verify import Check, Verification
from rigctl.state import journal
from rigctl.state.journal import Ending, JournalReader, append_ending, journal_file, read_endings
from tests.support.serving import add_profile


def test_each_action_leaves_its_ending(ctx: ServeContext, profiles: Path, port: int) -> None:
    add_profile(profiles, "crashes", '[env]\nRIGCTL_SIM_CRASH_AT = "load"\n', port)
    assert transaction.switch(ctx, "good").status == "switched"
    assert transaction.switch(ctx, "crashes").status == "rolled_back"
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        add_profile(profiles, "elsewhere", "", other.getsockname()[1])
        assert transaction.switch(ctx, "elsewhere").status == "refused"
    assert transaction.stop(ctx).status == "stopped"
    assert transaction.stop(ctx).status == "stopped"  # nothing ran: no ending of anything

    endings, damaged = read_endings()
    assert damaged == []
    assert [(e.action, e.status, e.target) for e in endings] == [
        ("switch", "switched", "good"),
        ("switch", "rolled_back", "crashes"),
        ("switch", "refused", "elsewhere"),
        ("stop", "stopped", "good"),
    ]
    first, failed, refused, stopped = endings
    assert first.verified is True and first.verify_failed is None  # the chat check passed
    assert first.finished is None and first.cut is None  # nothing served before it: no drain
    assert failed.verified is None  # its boot never got to the verification
    assert failed.running == 0 and failed.cut == 0  # good was idle: the drain found nothing running
    assert failed.finished is None  # without the front door nothing sees a request finish
    assert refused.running is None and refused.cut is None  # refused before the drain
    assert stopped.running == 0 and stopped.cut == 0
    assert all(e.seconds >= 0 for e in endings) and endings == sorted(endings, key=lambda e: e.when)
    assert journal_file().stat().st_mode & 0o777 == 0o600


def test_an_ending_says_what_the_drain_and_the_verification_found() -> None:
    failed = Verification(checks=(Check("chat", True, "ok"), Check("tools", False, "no tool call came back")))
    ending = ending_of("switch", "rolled_back", "alt", time.time() - 3, Drained(5, 2, 30.0), failed)
    assert (ending.running, ending.cut, ending.finished) == (5, 2, None)  # the gauges never say which finished
    assert ending.verified is False and ending.verify_failed == "tools: no tool call came back"
    skipped = ending_of(
        "switch", "switched", "alt", time.time(), Drained(0, 0, 0, known=False), Verification(skipped="--no-verify")
    )
    assert skipped.verified is None and skipped.finished is None and skipped.cut is None


def test_damaged_lines_are_skipped_and_the_journal_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    def ending(n: int) -> Ending:
        return Ending(float(n), "switch", "switched", f"p{n}", 1.0)

    append_ending(ending(0))
    with journal_file().open("a") as handle:
        handle.write('{"when": "yesterday"}\nnot json\n')
    append_ending(ending(1))
    endings, damaged = read_endings()
    assert [e.target for e in endings] == ["p0", "p1"] and damaged == [2, 3]

    reader = JournalReader()
    assert reader.summary().last_switch == ending(1)
    monkeypatch.setattr(journal, "JOURNAL_LIMIT", 2000)
    for n in range(2, 60):
        append_ending(ending(n))
    assert journal_file().stat().st_size <= 2000 + 200  # the older half went at each overflow
    endings, damaged = read_endings()
    assert endings[-1] == ending(59) and damaged == [] and len(endings) < 30
    summary = reader.summary()  # the file changed: read again
    assert summary.last_switch == ending(59) and summary.counts == {("switch", "switched"): len(endings)}
