"""Comment-preserving edits, refused edits, the profile CLI, refreshing from a vLLM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rigctl.cli import main
from rigctl.errors import BadInputError
from rigctl.profiles.edit import new_profile, set_value, unset_value
from rigctl.profiles.schema import ProfileError
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.vllm_version import OptionTables
from tests.profiles.conftest import write

COMMENTED = """# My experiment: one change at a time against the AWQ control.
description = "AWQ with more sequences"   # what changes
extends = "qwen36-27b-awq-tp2"

[vllm]
# keep this below 12: the prefix-cache hit rate collapsed at 16
max_num_seqs = 10
kv_cache_dtype = "fp8_e5m2"  # the 3090 has no e4m3

[env]
VLLM_LOGGING_LEVEL = "INFO"
"""


def test_set_keeps_comments_key_order_and_formatting(store: ProfileStore, tables: OptionTables, user_dir: Path) -> None:
    path = write(user_dir, "exp", COMMENTED)
    set_value(store, "exp", "vllm.max_num_seqs", "11", tables)
    set_value(store, "exp", "vllm.async_scheduling", "true", tables)
    set_value(store, "exp", "env.NCCL_P2P_DISABLE", '"1"', tables)
    text = path.read_text()
    assert text == COMMENTED.replace("max_num_seqs = 10", "max_num_seqs = 11").replace(
        'kv_cache_dtype = "fp8_e5m2"  # the 3090 has no e4m3',
        'kv_cache_dtype = "fp8_e5m2"  # the 3090 has no e4m3\nasync_scheduling = true',
    ).replace('VLLM_LOGGING_LEVEL = "INFO"\n', 'VLLM_LOGGING_LEVEL = "INFO"\nNCCL_P2P_DISABLE = "1"\n')
    assert store.load("exp").vllm["max_num_seqs"] == 11


def test_set_updates_a_kebab_key_in_place(store: ProfileStore, tables: OptionTables, user_dir: Path) -> None:
    path = write(user_dir, "kebab", 'extends = "qwen36-27b-awq-tp2"\n[vllm]\nmax-num-seqs = 4 # four\n')
    set_value(store, "kebab", "vllm.max_num_seqs", "6", tables)
    assert path.read_text() == 'extends = "qwen36-27b-awq-tp2"\n[vllm]\nmax-num-seqs = 6 # four\n'


@pytest.mark.parametrize(
    "key,value,message",
    [
        ("vllm.max_num_seq", "8", "did you mean max_num_seqs?"),
        ("vllm.gpu_memory_utilization", "1.5", "must be a share of each GPU's memory, above 0, at most 1"),
        ("vllm.swap_space", "4", "removed from vllm serve in 0.18.0"),
        ("extends", '"nothing-like-this"', "missing parent"),
    ],
)
def test_refused_edit_leaves_the_file_byte_identical(
    store: ProfileStore, tables: OptionTables, user_dir: Path, key: str, value: str, message: str
) -> None:
    path = write(user_dir, "exp", COMMENTED)
    before = path.read_bytes(), path.stat().st_mtime_ns
    with pytest.raises(ProfileError) as err:
        set_value(store, "exp", key, value, tables)
    assert message in str(err.value)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in user_dir.iterdir()) == ["exp.toml"]  # no temp file left behind


def test_shipped_profiles_are_not_edited_in_place(store: ProfileStore, tables: OptionTables) -> None:
    shipped = store.path_for("qwen36-27b-awq-tp2")
    before = shipped.read_bytes()
    with pytest.raises(BadInputError, match="rigctl profile new my-qwen36-27b-awq-tp2 --from qwen36-27b-awq-tp2"):
        set_value(store, "qwen36-27b-awq-tp2", "vllm.max_num_seqs", "4", tables)
    assert shipped.read_bytes() == before


def test_new_from_base_then_unset(store: ProfileStore, tables: OptionTables, user_dir: Path) -> None:
    path, warnings = new_profile(store, "mine", "qwen36-27b-fp8-tp2", tables)
    assert warnings == [] and path == user_dir / "mine.toml"
    profile = store.load("mine")
    assert profile.model == "Qwen/Qwen3.6-27B-FP8" and profile.chain[:2] == ("mine", "qwen36-27b-fp8-tp2")
    set_value(store, "mine", "vllm.max_num_seqs", "12", tables)
    unset_value(store, "mine", "vllm.max_num_seqs", tables)
    assert store.load("mine").vllm["max_num_seqs"] == 8  # the parent's value shows through again
    with pytest.raises(BadInputError, match="not set in") as refused:
        unset_value(store, "mine", "vllm.max_num_seqs", tables)
    said = str(refused.value)  # the parent that sets it, and what to do instead
    assert "it comes from qwen36-27b-awq-tp2" in said or "it comes from qwen36-27b-base" in said, said
    assert said.endswith("rigctl profile set mine vllm.max_num_seqs VALUE")
    assert store.load("mine").description == "qwen36-27b-fp8-tp2 with changes: say which here"  # not the parent's words
    with pytest.raises(BadInputError, match="already exists"):
        new_profile(store, "mine", "qwen36-27b-fp8-tp2", tables)


def test_cli_validate_reports_file_line_and_suggestion(user_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(user_dir, "typo", 'extends = "qwen36-27b-awq-tp2"\n\n[vllm]\nmax_num_seq = 8\n')
    assert main(["profile", "validate", "typo"]) == 2
    out = capsys.readouterr().out
    assert f"{path}:4: max_num_seq: not a vllm serve option; did you mean max_num_seqs?" in out


def test_cli_validate_shipped_profiles_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "validate"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 9 and all(line.endswith(": ok") for line in out)


def test_cli_set_refuses_unknown_keys_without_touching_the_file(user_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(user_dir, "exp", COMMENTED)
    assert main(["profile", "set", "exp", "vllm.max_num_seq", "8"]) == 2
    assert "did you mean max_num_seqs" in capsys.readouterr().err
    assert path.read_text() == COMMENTED
    assert main(["profile", "set", "exp", "vllm.max_num_seqs", "9"]) == 0
    assert "max_num_seqs = 9" in path.read_text() and "# keep this below 12" in path.read_text()


def test_cli_list_show_diff_argv(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["qwen36-27b-4090-tp2-mtp"]["mtp"] == "mtp x3" and rows["qwen36-27b-4090-dp2"]["dp"] == 2
    assert main(["profile", "show", "qwen36-27b-fp8-tp2", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["origins"]["vllm.quantization"]["profile"] == "qwen36-27b-fp8-tp2"
    assert shown["origins"]["vllm.tensor_parallel_size"]["profile"] == "qwen36-27b-awq-tp2"
    assert main(["profile", "diff", "qwen36-27b-awq-tp2", "qwen36-27b-awq-tp2-async", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"what": "--async-scheduling", "before": None, "after": ""}]
    assert main(["profile", "argv", "qwen36-27b-4090-tp2-mtp"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True vllm serve Qwen/Qwen3.6-27B-AWQ ")
    assert '--speculative-config \'{"method":"mtp","num_speculative_tokens":3}\'' in line


def test_argv_line_round_trips_through_a_shell() -> None:
    """The display line is real shell: run it through sh and compare what the program receives."""
    line = subprocess.run(
        [sys.executable, "-m", "rigctl", "profile", "argv", "qwen36-27b-4090-tp2-mtp", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    argv = json.loads(line)["argv"]
    shown = subprocess.run(
        [sys.executable, "-m", "rigctl", "profile", "argv", "qwen36-27b-4090-tp2-mtp"], capture_output=True, text=True, check=True
    ).stdout.strip()
    echoed = subprocess.run(
        [
            "sh",
            "-c",
            shown.replace(" vllm serve ", f" {sys.executable} -c 'import sys,json; print(json.dumps(sys.argv[1:]))' serve ", 1),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(echoed) == argv[1:]


FAKE_VLLM = {
    "vllm/__init__.py": '__version__ = "0.34.0rc1"\n',
    "vllm/utils/__init__.py": "",
    "vllm/utils/argparse_utils.py": "import argparse\nFlexibleArgumentParser = argparse.ArgumentParser\n",
    "vllm/entrypoints/__init__.py": "",
    "vllm/entrypoints/cli/__init__.py": "",
    "vllm/entrypoints/cli/serve.py": """
class ServeSubcommand:
    def subparser_init(self, sub):
        p = sub.add_parser("serve")
        p.add_argument("model_tag")
        p.add_argument("--max-num-seqs", type=int)
        p.add_argument("--brand-new-knob", type=int, help="new in this release")
        p.add_argument("--speculative-config", help="Should either be a valid JSON string or JSON keys")
        return p
""",
}


def test_refresh_options_from_an_installed_vllm(tmp_path: Path, user_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for rel, text in FAKE_VLLM.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    os.environ["PYTHONPATH"] = str(tmp_path)
    try:
        assert main(["profile", "refresh-options"]) == 0
    finally:
        del os.environ["PYTHONPATH"]
    assert "vLLM 0.34.0rc1: 3 options written" in capsys.readouterr().out
    write(user_dir, "new", 'model = "m"\n[vllm]\nbrand_new_knob = 3\nmax_num_seqs = 2\n')
    assert main(["profile", "validate", "new"]) == 0  # validation now follows the installed vLLM
    assert main(["profile", "argv", "new"]) == 0
    assert "--brand-new-knob 3" in capsys.readouterr().out


def test_refresh_options_explains_a_python_without_vllm(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "refresh-options", "--python", sys.executable]) == 1
    assert "could not read vLLM's parser" in capsys.readouterr().err


def test_a_user_copy_of_a_shipped_name_does_not_read_as_a_loop(user_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The demo's profiles: a user file named as the shipped one it extends."""
    write(user_dir, "qwen36-27b-base", 'extends = "qwen36-27b-base"\n\n[vllm]\nport = 8123\n')
    write(user_dir, "a", 'extends = "qwen36-27b-base"\nmodel = "m"\n')
    assert main(["profile", "show", "a"]) == 0
    assert "extends: qwen36-27b-base (yours) -> qwen36-27b-base (shipped)" in capsys.readouterr().out
