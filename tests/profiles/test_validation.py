"""Each validation rule has a failing example whose message names file, line and fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigctl.profiles.schema import ProfileError
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.validate import validate
from rigctl.vllm.options import OptionTable, parse_human_int
from tests.profiles.conftest import rig, write
from tests.support import present

HEAD = 'description = "test"\nmodel = "Qwen/Qwen3-8B"\n\n[vllm]\nhost = "127.0.0.1"\n'  # [vllm] opens on line 4


def errors_of(store: ProfileStore, table: OptionTable, name: str, rig_name: str | None = None) -> list[str]:
    diagnostics = validate(store.load(name), table, rig(rig_name) if rig_name else None)
    return [str(d) for d in diagnostics if d.severity == "error"]


def test_unknown_key_names_file_line_and_closest_option(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    path = write(user_dir, "typo", HEAD + "max_num_seq = 8\n")
    assert errors_of(store, table, "typo") == [f"{path}:6: max_num_seq: not a vllm serve option; did you mean max_num_seqs?"]


def test_all_errors_are_reported_at_once(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    write(user_dir, "many", HEAD + "max_num_seq = 8\nswap_space = 4\ngpu_memory_utilization = 1.5\n")
    found = errors_of(store, table, "many")
    assert [e.split(": ", 2)[1] for e in found] == ["max_num_seq", "swap_space", "gpu_memory_utilization"]


@pytest.mark.parametrize(
    "key,version",
    [
        ("swap_space = 4", "0.18.0"),
        ("enable_reasoning = true", "0.10.0"),
        ("num_scheduler_steps = 8", "0.10.2"),
        ('task = "generate"', "0.13.0"),
    ],
)
def test_removed_options_are_named_with_their_version(
    store: ProfileStore, table: OptionTable, user_dir: Path, key: str, version: str
) -> None:
    write(user_dir, "old", HEAD + key + "\n")
    (error,) = errors_of(store, table, "old")
    assert f"removed from vllm serve in {version}" in error and ":6:" in error


@pytest.mark.parametrize(
    "line,expected",
    [
        ("max_num_seqs = 8.5", "max_num_seqs: must be an integer"),
        ("max_num_seqs = 0", "max_num_seqs: must be a whole number of sequences of at least 1, not 0"),
        ("gpu_memory_utilization = 0", "must be a share of each GPU's memory, above 0, at most 1"),
        ("gpu_memory_utilization = 1.01", "must be a share of each GPU's memory, above 0, at most 1"),
        ('gpu_memory_utilization = "high"', "must be a number"),
        ('quantization = "auto_round"', "AutoRound checkpoints load as `inc`"),
        ('quantization = "awq_marlinn"', "did you mean awq_marlin?"),
        ('kv_cache_dtype = "fp8_e6m2"', "is not one of auto"),
        ('dtype = "bf16"', "'bf16' is not one of auto, bfloat16"),
        ("enforce_eager = 1", "must be true or false"),
        ('max_model_len = "32q"', "a size like 32k"),
        ("port = 70000", "port: must be a TCP port, from 1 to 65,535, not 70000"),
        ('speculative_config = { method = "medusa3" }', "'medusa3' is not one of"),
        (
            'speculative_config = { method = "mtp", num_speculative_tokens = 0 }',
            "num_speculative_tokens: must be a whole number of draft tokens of at least 1, not 0",
        ),
        ('speculative_config = { method = "mtp", when = 1979-05-27 }', "only JSON values (no dates or times)"),
        ("compilation_config = '{\"cudagraph_mode\": '", "a TOML table or a JSON string"),
        ('model = "x"', "set the top-level `model` key instead"),
    ],
)
def test_type_and_range_errors(store: ProfileStore, table: OptionTable, user_dir: Path, line: str, expected: str) -> None:
    write(user_dir, "bad", HEAD + line + "\n")
    (error,) = errors_of(store, table, "bad")
    assert expected in error and ":6:" in error, error


@pytest.mark.parametrize(
    "line",
    [
        'max_model_len = "32k"',
        'max_model_len = "auto"',
        "max_model_len = -1",
        'max_num_batched_tokens = "16K"',
        'kv-cache-memory-bytes = "12G"',
        'compilation_config = \'{"cudagraph_mode": "FULL_AND_PIECEWISE"}\'',
        'served_model_name = ["a", "b"]',
        "no_async_scheduling = true",
        "device-memory-utilization = 0.9",
    ],
)
def test_accepted_forms(store: ProfileStore, table: OptionTable, user_dir: Path, line: str) -> None:
    write(user_dir, "good", HEAD + line + "\n")
    assert errors_of(store, table, "good") == []


def test_human_sizes_follow_vllm() -> None:
    assert parse_human_int("32k") == 32_000 and parse_human_int("32K") == 32_768
    assert parse_human_int("1.5M") == 1_572_864 and parse_human_int(131072) == 131072
    assert parse_human_int("auto") is None and parse_human_int(True) is None


def test_gpu_count_against_the_rig(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    write(user_dir, "big", HEAD + "tensor_parallel_size = 2\ndata_parallel_size = 2\n")
    (error,) = errors_of(store, table, "big", "2x3090-nvlink")
    assert "needs 4 GPUs; the rig (sim:2x3090-nvlink) has 2" in error and ":6:" in error
    assert errors_of(store, table, "big") == []  # no rig known: not checked


def test_toml_syntax_error_has_line_and_column(store: ProfileStore, user_dir: Path) -> None:
    path = write(user_dir, "broken", HEAD + "max_num_seqs = = 8\n")
    with pytest.raises(ProfileError) as err:
        store.load("broken")
    message = str(err.value)
    assert message.startswith(f"{path}:6: invalid TOML") and "line 6, column" in message


def test_extends_cycle_names_the_chain(store: ProfileStore, user_dir: Path) -> None:
    write(user_dir, "a", 'extends = "b"\nmodel = "m"\n')
    write(user_dir, "b", 'extends = "c"\n')
    write(user_dir, "c", 'extends = "a"\n')
    with pytest.raises(ProfileError, match=r"c.toml:1: extends: extends cycle: a -> b -> c -> a"):
        store.load("a")


def test_missing_parent_names_the_chain(store: ProfileStore, user_dir: Path) -> None:
    write(user_dir, "child", 'extends = "parent"\nmodel = "m"\n')
    write(user_dir, "parent", 'extends = "grandparent"\n')
    with pytest.raises(ProfileError, match=r"parent.toml:1: extends: missing parent in child -> parent -> grandparent"):
        store.load("child")


def test_top_level_mistakes(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    write(user_dir, "top", 'descripton = "x"\nmodel = "m"\nmax_num_seqs = 4\n[vllm]\nhost = "127.0.0.1"\n')
    found = errors_of(store, table, "top")
    assert any(":1: descripton: not a profile key; did you mean description?" in e for e in found)
    assert any(":3: max_num_seqs: not a profile key; it is a vllm serve option: put it in the [vllm] table" in e for e in found)


def test_missing_model(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    write(user_dir, "nomodel", '[vllm]\nhost = "127.0.0.1"\n')
    assert any("model: missing" in e for e in errors_of(store, table, "nomodel"))


def test_kebab_and_snake_are_one_key_and_child_wins(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    write(user_dir, "parent2", HEAD + "max-num-seqs = 4\n")
    write(user_dir, "child2", 'extends = "parent2"\n[vllm]\nmax_num_seqs = 16\n')
    profile = store.load("child2")
    assert profile.vllm == {"host": "127.0.0.1", "max_num_seqs": 16}
    assert present(profile.origin("vllm.max_num_seqs")).profile == "child2"
    assert present(profile.origin("vllm.host")).profile == "parent2"


def test_same_key_twice_in_two_spellings(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    write(user_dir, "twice", HEAD + "async_scheduling = true\nno_async_scheduling = true\n")
    (error,) = errors_of(store, table, "twice")
    assert "sets the same option as `async_scheduling`" in error


def test_user_profile_customises_a_shipped_one_of_the_same_name(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    write(user_dir, "qwen36-27b-base", 'extends = "qwen36-27b-base"\n[vllm]\nmax_num_seqs = 4\n')
    profile = store.load("qwen36-27b-base")
    assert profile.vllm["max_num_seqs"] == 4 and profile.model == "Qwen/Qwen3.6-27B"
    assert not profile.shipped and profile.chain == ("qwen36-27b-base", "qwen36-27b-base")
    # and profiles extending it now see the user's value
    assert store.load("qwen36-27b-awq-tp2").vllm["max_num_seqs"] == 4
