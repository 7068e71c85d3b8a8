"""Lints (warnings with a one-line reason) and the rendering to `vllm serve` argv."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rigctl.profiles.store import ProfileStore
from rigctl.profiles.validate import validate
from rigctl.profiles.vllm_args import render
from rigctl.vllm.options import OptionTable
from tests.profiles.conftest import rig, write
from tests.support import vllm_parser

HEAD = 'model = "Qwen/Qwen3-8B"\n[vllm]\nhost = "127.0.0.1"\n'

# The rig each shipped profile is written for.
SHIPPED_RIGS = {
    "qwen25-3b-dp2": "2x4090-pcie",
    "qwen36-27b-1x3090": "1x3090",
    "qwen36-27b-4090-dp2": "2x4090-pcie",
    "qwen36-27b-4090-tp2-mtp": "2x4090-pcie",
    "qwen36-27b-autoround-tp2": "2x3090-nvlink",
    "qwen36-27b-awq-tp2": "2x3090-nvlink",
    "qwen36-27b-awq-tp2-async": "2x3090-nvlink",
    "qwen36-27b-base": "2x3090-nvlink",
    "qwen36-27b-fp8-tp2": "2x3090-nvlink",
}


def warnings_of(store: ProfileStore, table: OptionTable, name: str, rig_name: str | None = None) -> list[str]:
    return [str(d) for d in validate(store.load(name), table, rig(rig_name) if rig_name else None) if d.severity == "warning"]


def test_every_shipped_profile_is_listed_for_a_rig(store: ProfileStore) -> None:
    assert sorted(SHIPPED_RIGS) == store.names()


@pytest.mark.parametrize("name", sorted(SHIPPED_RIGS))
def test_shipped_profiles_validate_clean_on_their_rig(store: ProfileStore, table: OptionTable, name: str) -> None:
    assert validate(store.load(name), table, rig(SHIPPED_RIGS[name])) == []


@pytest.mark.parametrize("name", sorted(SHIPPED_RIGS))
def test_shipped_argv_parses_with_vllm_0_33_parser(store: ProfileStore, table: OptionTable, name: str) -> None:
    spec = render(store.load(name), table)
    assert spec.argv[:2] == ("vllm", "serve")
    parsed = vllm_parser.parse(list(spec.argv[2:]))
    assert parsed.model_tag == store.load(name).model
    assert parsed.host == "127.0.0.1"
    if parsed.speculative_config is not None:
        assert parsed.speculative_config["method"] == "mtp"


@pytest.mark.parametrize(
    "text,rig_name,expected",
    [
        ("gpu_memory_utilization = 0.98\n", None, "expandable_segments:True"),
        ("max_num_batched_tokens = 4096\n", "1x3090", "inflates the activation peak"),
        ("data_parallel_size = 2\n", None, "set api_server_count = 1"),
        ("tensor_parallel_size = 2\n", "2x3090-pcie-gen3", "below Gen4 x16 (GPU1 Gen3 x8)"),
        ('speculative_config = { method = "qwen3_next_mtp", num_speculative_tokens = 3 }\n', None, 'write method = "mtp"'),
        ('kv_cache_dtype = "fp8"\n', "2x3090-nvlink", "use fp8_e5m2"),
        ("async_scheduling = true\npipeline_parallel_size = 2\n", None, "refuses async scheduling"),
    ],
)
def test_each_lint_fires_with_its_reason(
    store: ProfileStore, table: OptionTable, user_dir: Path, text: str, rig_name: str | None, expected: str
) -> None:
    write(user_dir, "lint", HEAD + text)
    found = warnings_of(store, table, "lint", rig_name)
    assert len(found) == 1 and expected in found[0] and ":4:" in found[0], found


@pytest.mark.parametrize(
    "text,rig_name",
    [
        ('gpu_memory_utilization = 0.98\n[env]\nPYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"\n', None),
        ("max_num_batched_tokens = 4096\n", None),  # no rig known
        ("max_num_batched_tokens = 4096\ntensor_parallel_size = 2\n", "2x3090-nvlink"),
        ("data_parallel_size = 2\napi_server_count = 1\n", None),
        ("tensor_parallel_size = 2\n", "2x4090-pcie"),  # no P2P, but Gen4 x16 on both cards
        ("tensor_parallel_size = 2\n", "2x3090-gen3-x8"),  # slot-limited, but NVLink carries the all-reduce
        ('kv_cache_dtype = "fp8"\n', "2x4090-pcie"),
    ],
)
def test_lints_stay_quiet_when_the_reason_does_not_hold(
    store: ProfileStore, table: OptionTable, user_dir: Path, text: str, rig_name: str | None
) -> None:
    write(user_dir, "quiet", HEAD + text)
    assert warnings_of(store, table, "quiet", rig_name) == []


def test_missing_host_is_a_lint_and_rendered_safe(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    write(user_dir, "open", 'model = "m"\n[vllm]\nmax_num_seqs = 4\n')
    (warning,) = warnings_of(store, table, "open")
    assert "host: not set: vLLM binds all interfaces" in warning
    argv = render(store.load("open"), table).argv
    assert argv[-2:] == ("--host", "127.0.0.1")


def test_booleans_in_the_forms_vllm_accepts(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    write(
        user_dir,
        "bools",
        HEAD + "async_scheduling = false\nenable_prefix_caching = false\n"
        "enforce_eager = true\ndisable_log_stats = true\ntrust_remote_code = false\n",
    )
    argv = render(store.load("bools"), table).argv
    for flag in (
        "--no-async-scheduling",
        "--disable-prefix-caching",
        "--enforce-eager",
        "--disable-log-stats",
        "--no-trust-remote-code",
    ):
        assert flag in argv
    vllm_parser.parse(list(argv[2:]))


def test_tables_lists_and_order(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    write(
        user_dir,
        "shapes",
        HEAD + 'served_model_name = ["a", "b"]\nmax_model_len = -1\n'
        "limit_mm_per_prompt = { image = 0, video = 0 }\ntensor_parallel_size = 2\nmax_num_seqs = 4\n",
    )
    spec = render(store.load("shapes"), table)
    argv = list(spec.argv)
    assert argv.index("--tensor-parallel-size") < argv.index("--max-num-seqs") < argv.index("--host")
    assert argv[argv.index("--served-model-name") + 1 : argv.index("--served-model-name") + 3] == ["a", "b"]
    assert "--max-model-len=-1" in argv
    assert json.loads(argv[argv.index("--limit-mm-per-prompt") + 1]) == {"image": 0, "video": 0}
    assert spec.served_names == ("a", "b")
    assert render(store.load("shapes"), table).argv == spec.argv  # deterministic
    vllm_parser.parse(argv[2:])


def test_secrets_go_through_the_environment_and_are_redacted_for_display(
    store: ProfileStore, table: OptionTable, user_dir: Path
) -> None:
    write(
        user_dir,
        "secret",
        HEAD + 'api_key = "sk-live-123"\nhf_token = "-hf-dash"\n[env]\nMY_TOKEN = "hf_abc"\nVLLM_LOGGING_LEVEL = "DEBUG"\n',
    )
    spec = render(store.load("secret"), table)
    assert not any("sk-live-123" in a or "-hf-dash" in a for a in spec.argv)  # not in `ps`
    assert spec.env["VLLM_API_KEY"] == "sk-live-123" and spec.env["HF_TOKEN"] == "-hf-dash"
    shown = spec.display()
    assert "sk-live-123" not in shown and "hf_abc" not in shown and "-hf-dash" not in shown
    assert "VLLM_API_KEY='***'" in shown and "MY_TOKEN='***'" in shown and "VLLM_LOGGING_LEVEL=DEBUG" in shown


def test_several_api_keys_stay_on_the_command_line_and_are_redacted(
    store: ProfileStore, table: OptionTable, user_dir: Path
) -> None:
    write(user_dir, "keys", HEAD + 'api_key = ["sk-a", "sk-b"]\n')
    spec = render(store.load("keys"), table)
    assert spec.argv[spec.argv.index("--api-key") + 1 :][:2] == ("sk-a", "sk-b")  # VLLM_API_KEY holds one
    assert spec.redacted_argv()[spec.argv.index("--api-key") + 1 :][:2] == ["***", "***"]


def test_invalid_profile_does_not_render(store: ProfileStore, table: OptionTable, user_dir: Path) -> None:
    from rigctl.profiles.schema import ProfileError

    write(user_dir, "nope", HEAD + "max_num_seq = 8\n")
    with pytest.raises(ProfileError, match="did you mean max_num_seqs"):
        render(store.load("nope"), table)
