"""Profiles are checked and rendered against the options of the vLLM their command runs."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rigctl.cli import main
from rigctl.profiles.refresh import build_table
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.validate import validate
from rigctl.profiles.vllm_args import render
from rigctl.profiles.vllm_version import OptionTables, command_version
from rigctl.vllm.options import load_option_table, table_for
from tests.profiles.conftest import write

CPU = Path(__file__).parent.parent / "fixtures" / "vllm-cpu"
SIM_032 = (sys.executable, "-m", "rigctl.sim.vllm_server", "--as-version", "0.32.0")


def test_refresh_reads_0_32s_booleans_as_booleans_with_both_spellings() -> None:
    raw = json.loads((CPU / "serve_parser_0.32.0.json").read_text())
    assert sum(a["action"] == "BooleanOptionalAction" for a in raw["actions"]) == 88
    table = build_table(raw)
    booleans = {d: o for d, o in table["options"].items() if o["kind"] == "bool"}
    assert len(booleans) == 88
    assert booleans["enable_prefix_caching"]["negative"] == "--no-enable-prefix-caching"
    assert booleans["async_scheduling"]["flags"] == ["--async-scheduling"]
    assert table["vllm_version"] == "0.32.0"
    assert table == json.loads((Path("rigctl/vllm/data/vllm_options_0.32.0.json")).read_text()) | {
        "source": table["source"]
    }  # the bundled 0.32 table is exactly what refresh builds


@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_every_shipped_profile_validates_and_renders_for_both_versions(version: str) -> None:
    table, store = load_option_table(version), ProfileStore()
    for name in store.names():
        profile = store.load(name)
        assert not [d for d in validate(profile, table) if d.severity == "error"], (version, name)
        render(profile, table)


def test_the_prefix_cache_switch_is_spelt_as_the_version_spells_it(store: ProfileStore, user_dir: Path) -> None:
    write(user_dir, "nocache", 'extends = "qwen36-27b-awq-tp2"\n[vllm]\nenable_prefix_caching = false\n')
    profile = store.load("nocache")
    assert "--no-enable-prefix-caching" in render(profile, load_option_table("0.32.0")).argv
    assert "--disable-prefix-caching" in render(profile, load_option_table("0.33.0")).argv


def test_the_version_comes_from_the_command_and_is_asked_once(tmp_path: Path) -> None:
    counter = tmp_path / "asked"
    fake = tmp_path / "vllm"
    fake.write_text(f"#!/bin/sh\necho x >> {counter}\necho 'Triton is installed, but...'\necho 0.32.0+cpu\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    assert command_version((str(fake),)) == "0.32.0+cpu"
    assert command_version((str(fake),)) == "0.32.0+cpu"
    assert counter.read_text().count("x") == 1  # cached by the executable's path and mtime
    choice = table_for("0.32.0+cpu")
    assert choice.exact and choice.note is None and choice.table.version == "0.32.0"


def test_a_version_without_a_table_is_said_with_the_table_used() -> None:
    choice = table_for("0.34.1")
    assert not choice.exact and choice.table.version == "0.33.0"
    assert choice.note == (
        "no option table for vLLM 0.34.1; checked against vLLM 0.33.0's (bundled): "
        "`rigctl profile refresh-options` builds the right one"
    )
    assert table_for("0.20.0").table.version == "0.32.0"  # older than every table: the oldest


def test_a_profile_is_checked_against_the_vllm_its_own_command_runs(store: ProfileStore, user_dir: Path) -> None:
    write(
        user_dir,
        "old",
        'extends = "qwen36-27b-awq-tp2"\n[vllm]\ndisable_prefix_caching = true\n'
        f"[rigctl]\nvllm_command = {json.dumps(list(SIM_032))}\n",
    )
    tables = OptionTables(("vllm",))
    choice = tables.choose(store.load("old"))
    assert choice.exact and choice.table.version == "0.32.0"
    errors = [d for d in validate(store.load("old"), choice.table) if d.severity == "error"]
    assert errors and "not a vllm serve option" in str(errors[0])  # 0.32 has --no-enable-prefix-caching only


def test_profile_argv_shows_the_command_that_will_really_run(
    tmp_path: Path, isolated_dirs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = isolated_dirs / "config" / "rigctl"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(f'[server]\nvllm_command = ["{tmp_path}/venv/bin/vllm"]\n')
    assert main(["profile", "argv", "qwen36-27b-awq-tp2"]) == 0
    out = capsys.readouterr()
    assert f"{tmp_path}/venv/bin/vllm serve Qwen/Qwen3.6-27B-AWQ" in out.out
    assert "the vLLM version the command runs is not known yet" in out.err


def test_validate_says_which_version_it_checked_against(isolated_dirs: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rigctl", "profile", "validate", "--sim", "2x3090-nvlink"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    assert "checked against vLLM 0.33.0 options (bundled) and rig sim:2x3090-nvlink" in done.stderr
