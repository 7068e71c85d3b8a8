"""Every declared rule (rigctl/rules.py) over any value TOML or JSON can hold: it returns the value
converted, or refuses it with one line in the key's unit that starts "must be"; nothing else
(no TypeError, OverflowError or ValueError from inside). And the state files' decoder reads each
field by the rule its type implies, so a value a file holds is either taken as that rule takes it
or named damaged with that rule's words (issue 49: five mechanisms, five vocabularies before)."""

from __future__ import annotations

import dataclasses
import math
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rigctl import jsonio
from rigctl.bench import plan_file
from rigctl.config import RULES
from rigctl.profiles.validate import DRAFT_TOKENS, EXTRA_ARGS, HUMAN_COUNTS, VLLM_RULES
from rigctl.rig_table import RIG_RULES
from rigctl.rules import PORT, Listen, Rule, RuleError, complaint, shown
from rigctl.state.boots import BootRecord
from rigctl.state.statefiles import ActiveState, ServerRecord
from tests.properties.strategies import hostile
from tests.properties.test_outside_input import BOOT, PROPERTY, RECORD, STATE

STATE_CLASSES = (ServerRecord, ActiveState, BootRecord)

DECLARED: dict[str, Rule] = {
    **{f"config.{name}": rule for name, rule in RULES.items()},
    **{f"profile.vllm.{name}": rule for name, rule in {**VLLM_RULES, **HUMAN_COUNTS}.items()},
    "profile.vllm.speculative_config.num_speculative_tokens": DRAFT_TOKENS,
    "profile.rigctl.extra_args": EXTRA_ARGS,
    **{f"plan.{name}": rule for name, rule in vars(plan_file).items() if isinstance(rule, Rule)},
    **{f"config.rigs.{name}": rule for name, rule in RIG_RULES.items()},
    **{
        f"state.{cls.__name__}.{field.name}": jsonio.of_type(typing.get_type_hints(cls)[field.name])
        for cls in STATE_CLASSES
        for field in dataclasses.fields(cls)
    },
    "port": PORT,
    "listen": Listen(),
}


def test_the_declared_rules_are_found() -> None:
    """The property below reads the rules where they are declared: a module that moves them must
    not leave it checking nothing."""
    assert {"plan.CONCURRENCY", "plan.TIMEOUT", "config.verify_min_acceptance", "config.rigs.ssh"} <= DECLARED.keys()
    assert sum(name.startswith("state.") for name in DECLARED) >= 20


@PROPERTY
@given(name=st.sampled_from(sorted(DECLARED)), value=hostile)
@example(name="config.verify_min_context", value=10**400)
@example(name="plan.SPEED", value=math.nan)
@example(name="state.ServerRecord.port", value=2.0**70)
@example(name="config.rigs.ssh_options", value=["-p", 2222])
def test_a_declared_rule_takes_a_value_or_says_in_one_line_what_it_must_be(name: str, value: Any) -> None:
    rule = DECLARED[name]
    try:
        parsed = rule.parse(value)
    except RuleError as exc:
        said = complaint(exc, value)
        assert str(exc).startswith("must be ") and "\n" not in said, (name, said)
        assert f", not {shown(value)}" in said, (name, said)
        assert not rule.accepts(value)
        return
    assert rule.accepts(value)
    # what a rule returns, it takes again as itself: a value saved back (profile edit, set) reads the same
    again = rule.parse(list(parsed) if isinstance(parsed, tuple) else parsed)
    assert again == parsed or (isinstance(again, float) and math.isnan(again)), (name, value, parsed, again)
    if isinstance(parsed, float):
        assert math.isfinite(parsed), (name, value)


@PROPERTY
@given(cls=st.sampled_from(STATE_CLASSES), data=st.data())
def test_a_state_field_is_read_by_its_types_rule_or_named_with_its_words(cls: type, data: st.DataObject) -> None:
    base = {ServerRecord: RECORD, ActiveState: STATE, BootRecord: BOOT}[cls]
    field = data.draw(st.sampled_from([f.name for f in dataclasses.fields(cls) if f.name in base]))
    value = data.draw(hostile)
    rule = {n: r for n, r, _ in jsonio._field_rules(cls)}[field]
    path = Path("/state/rigctl/x.json")
    try:
        built: Any = jsonio.build(cls, {**base, field: value}, path)
    except jsonio.DamagedFile as exc:
        if not rule.accepts(value):
            with pytest.raises(RuleError) as refused:
                rule.parse(value)
            assert exc.reason == f"{field!r}: {complaint(refused.value, value)}"
        return  # else a class's own range check (a port of 70000) refused what the type takes
    assert rule.accepts(value) and getattr(built, field) == rule.parse(value)


SCRAPE_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([-3.0, 7.0, 1.0, 0.0, 0.5, math.inf, -math.inf])
)


@PROPERTY
@given(running=SCRAPE_VALUES, usage=SCRAPE_VALUES, tokens=SCRAPE_VALUES)
@example(running=-3.0, usage=7.0, tokens=math.inf)
def test_a_scrapes_figures_pass_their_families_rules_or_are_refused_by_name(running: float, usage: float, tokens: float) -> None:
    """A saved or live scrape is outside input too: a count below zero or infinite, or a KV share
    above 1, is never a figure; it is refused and named (metrics --file says it and exits 2)."""
    from rigctl.engine.metrics import snapshot
    from rigctl.engine.prom import parse

    text = (
        f'vllm:num_requests_running{{model_name="m"}} {running!r}\n'
        f'vllm:kv_cache_usage_perc{{model_name="m"}} {usage!r}\n'
        f'vllm:generation_tokens_total{{model_name="m"}} {tokens!r}\n'
    ).replace("inf", "Inf")
    found = snapshot(parse(text), 0.0)
    for value, figure, family, ok in (
        (running, found.running, "vllm:num_requests_running", 0 <= running < math.inf),
        (usage, found.kv_usage, "vllm:kv_cache_usage_perc", 0 <= usage <= 1),
        (tokens, found.counter("generation_tokens"), "vllm:generation_tokens_total", 0 <= tokens < math.inf),
    ):
        named = any(said.startswith(f"{family}: must be ") for said in found.refused)
        if math.isnan(value):
            assert not named
        elif ok:
            assert figure == value and not named, (family, value, figure, found.refused)
        else:
            assert named and (figure is None or figure != value), (family, value, figure, found.refused)
