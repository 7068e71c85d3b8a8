"""A 200 with wrong output is a failed boot ([verify] answers, tools_streamed, min_acceptance),
through the CLI on the simulator: the simulated engine answers " tok tok ...", streams a forced
tool call as tool_calls deltas unless RIGCTL_SIM_DROP_STREAMED_TOOL_CALLS says its parser loses
it, and accepts no draft under RIGCTL_SIM_ACCEPTANCE = 0. Each fault rolls back to good."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.rig import Rig

CONFIG = "[server]\nstop_grace = 3\nkill_wait = 2\n"
MTP = '{ method = "mtp", num_speculative_tokens = 3 }'


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    harness = Rig(tmp_path / "home")
    yield harness
    harness.cleanup()


def test_a_wrong_known_answer_fails_the_boot_quoting_both(rig: Rig) -> None:
    answers = rig.config_dir / "known.jsonl"
    answers.write_text(
        '{"prompt": "The simulator says", "regex": "^( ?tok)+$", "max_tokens": 4}\n'
        '{"messages": [{"role": "user", "content": "Capital of France? One word."}], "expect": "Paris", "max_tokens": 4}\n'
    )
    rig.write_config(CONFIG + '[verify]\nanswers = "known.jsonl"\n')
    assert rig.rigctl("switch", "good", "--no-verify").returncode == 0
    failed = rig.rigctl("switch", "alt")
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert f"alt failed: {answers}:2: the new profile answered 'tok tok tok tok', which is not the known answer 'Paris'" in (
        failed.stderr
    ), failed.stderr
    assert rig.status()["active_profile"] == "good"
    answers.write_text(answers.read_text().splitlines()[0] + "\n")
    switched = rig.rigctl("switch", "alt")
    assert switched.returncode == 0 and "verified: chat, answer" in switched.stdout, switched.stdout
    answers.write_text('{"prompt": "x", "expect": "a", "regex": "b"}\n')
    refused = rig.rigctl("switch", "good")
    assert refused.returncode == 2 and f"{answers}:1: give expect (the exact answer) or regex, one of them" in refused.stderr
    assert rig.status()["active_profile"] == "alt"  # a bad answers file touches nothing


def test_a_streamed_tool_call_that_vanishes_fails_the_boot(rig: Rig) -> None:
    rig.write_config(CONFIG + "[verify]\ntools_streamed = true\n")
    assert rig.rigctl("switch", "good").returncode == 0
    rig.add_profile("drops", '[env]\nRIGCTL_SIM_DROP_STREAMED_TOOL_CALLS = "1"\n')
    failed = rig.rigctl("switch", "drops")
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert "drops failed: a streamed chat with tool_choice naming rigctl_probe answered 200 with no tool call in its stream" in (
        failed.stderr
    ), failed.stderr
    assert rig.status()["active_profile"] == "good"
    switched = rig.rigctl("switch", "alt")
    assert switched.returncode == 0 and "tools_streamed" in switched.stdout, switched.stdout


def test_drafts_that_are_never_accepted_fail_the_boot_naming_the_rate(rig: Rig) -> None:
    rig.write_config(CONFIG + "[verify]\nmin_acceptance = 0.2\n")
    assert rig.rigctl("switch", "good").returncode == 0
    rig.add_profile("mtp", f"speculative_config = {MTP}\n")
    switched = rig.rigctl("switch", "mtp")
    assert switched.returncode == 0 and "acceptance" in switched.stdout, switched.stdout + switched.stderr
    rig.add_profile("mtp0", f'speculative_config = {MTP}\n[env]\nRIGCTL_SIM_ACCEPTANCE = "0"\n')
    failed = rig.rigctl("switch", "mtp0")
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert "mtp0 failed: the drafts' acceptance over the verification's requests was 0.0% (0 of " in failed.stderr, failed.stderr
    assert "below [verify] min_acceptance 20%" in failed.stderr
    assert rig.status()["active_profile"] == "mtp"
