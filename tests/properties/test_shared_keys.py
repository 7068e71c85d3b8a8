"""A key read in two places has one rule: for any value TOML can hold, config.toml's [verify] and
[server] keys and a profile's [verify] and [rigctl] keys accept the same values and refuse the
same, each refusal one line in the key's unit (issue 49: `[verify] min_acceptance = 2` loaded from
config.toml while a profile refused it, so every speculative profile then failed its verification)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import tomlkit
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rigctl.config import LAYOUT, RULES, load_settings
from rigctl.errors import BadInputError
from rigctl.profiles.schema import VERIFY_KEYS
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.validate import _rigctl_table, verify_table_problems

# (the profile's table and key, config.toml's table and key)
SHARED = [(("verify", key), ("verify", key)) for key in VERIFY_KEYS] + [
    (("rigctl", "boot_timeout"), ("server", "boot_timeout")),
    (("rigctl", "vllm_command"), ("server", "vllm_command")),
]

TOML_VALUES = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**50), max_value=2**50),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9),
    st.sampled_from([0, 1, 2, 0.5, -0.1, 86400, 86401, 0.0, 1.0, 2**40]),
    st.text(max_size=20),
    st.lists(st.text(min_size=0, max_size=8), max_size=3),
)


def config_accepts(home: Path, table: str, key: str, value: object) -> str | None:
    (home / "config.toml").write_text(tomlkit.dumps({table: {key: value}}))
    try:
        load_settings()
    except BadInputError as exc:
        return str(exc)
    return None


def profile_accepts(home: Path, table: str, key: str, value: object) -> str | None:
    profiles = home / "profiles"
    profiles.mkdir(exist_ok=True)
    (profiles / "p.toml").write_text('extends = "qwen36-27b-awq-tp2"\n' + tomlkit.dumps({table: {key: value}}))
    profile = ProfileStore(user=profiles).load("p")
    problems = verify_table_problems(profile) if table == "verify" else _rigctl_table(profile)
    said = [d for d in problems if d.key in (key, f"{table}.{key}") and d.severity == "error"]
    return str(said[0]) if said else None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(shared=st.sampled_from(SHARED), value=TOML_VALUES)
@example(shared=(("verify", "min_acceptance"), ("verify", "min_acceptance")), value=2)
@example(shared=(("verify", "timeout_s"), ("verify", "timeout_s")), value=0)
@example(shared=(("rigctl", "vllm_command"), ("server", "vllm_command")), value="")
def test_a_shared_key_is_one_rule_wherever_it_is_read(
    shared: tuple[tuple[str, str], tuple[str, str]], value: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    (profile_table, profile_key), (config_table, config_key) = shared
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        monkeypatch.setenv("RIGCTL_CONFIG", str(home / "config.toml"))
        in_config = config_accepts(home, config_table, config_key, value)
        in_profile = profile_accepts(home, profile_table, profile_key, value)
    assert (in_config is None) == (in_profile is None), (value, in_config, in_profile)
    if in_config is not None and in_profile is not None:
        # the same words, each after its own file:line and key
        why = str(in_config).rsplit(f"{config_key}: ", 1)[-1]
        assert in_profile.endswith(why) and "\n" not in in_config and "\n" not in in_profile, (in_config, in_profile)


def test_every_setting_has_a_rule_and_the_config_layout_names_only_settings_with_one() -> None:
    named = {field for table in LAYOUT.values() for field in table.values()}
    assert named <= RULES.keys()
    assert RULES["record_interval"].accepts(0.5) and not RULES["record_interval"].accepts(0)


def test_the_issues_cases_are_refused_in_their_own_unit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCTL_CONFIG", str(tmp_path / "config.toml"))
    cases = {
        "[verify]\nmin_acceptance = 2\n": "verify.min_acceptance: must be a share of drafted tokens, from 0 to 1 (e.g. 0.2)",
        "[record]\nregression_points = -0.1\n": "record.regression_points: must be a share of the hit rate",
        "[record]\nmin_prefix_queries = -5\n": "record.min_prefix_queries: must be a non-negative number of prefix tokens queried",
        "[record]\ninterval = 0\n": "record.interval: must be a number of seconds from 0.5 to 3,600",
    }
    for text, said in cases.items():
        (tmp_path / "config.toml").write_text(text)
        try:
            load_settings()
        except BadInputError as exc:
            assert said in str(exc) and f"{tmp_path / 'config.toml'}:2: " in str(exc), str(exc)
        else:
            raise AssertionError(f"{text!r} was accepted")


def test_the_flag_that_stands_for_a_key_is_refused_by_the_keys_rule(capsys: pytest.CaptureFixture[str]) -> None:
    from rigctl.cli import main

    assert main(["watch", "--interval", "0.1"]) == 2
    said = capsys.readouterr().err
    assert "--interval: must be a number of seconds from 0.5 to 3,600 (as [record] interval)" in said, said
