"""`rigctl profile import`: the vLLM the owner already runs, as a validated profile. From a command
line, a script, a running process (/proc of a real one), a systemd unit and a compose file; secrets
only in the 0600 env file; flags the option table does not know kept verbatim; and every shipped
profile's own launch imported back to the same launch."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rigctl.cli import main
from rigctl.profiles.import_sources import from_command_line
from rigctl.profiles.importing import build_profile
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.summary import launch_diff
from rigctl.profiles.vllm_args import render
from rigctl.profiles.vllm_version import OptionTables
from rigctl.vllm.options import OptionTable
from tests.profiles.conftest import running_vllm

SECRET, TOKEN = "sk-never-in-the-profile", "hf_never_in_the_profile"


def imported(store: ProfileStore, name: str) -> tuple[str, list[str]]:
    """The written profile's text, and the argv it renders (what `rigctl switch NAME` runs)."""
    profile = store.load(name)
    spec = render(profile, OptionTables(("vllm",)).choose(profile).table)
    return store.path_for(name).read_text(), list(spec.argv)


def test_a_command_line_with_short_flags_secrets_and_a_new_flag(
    user_dir: Path, store: ProfileStore, capsys: pytest.CaptureFixture[str]
) -> None:
    words = [
        f"HF_TOKEN={TOKEN}",
        "vllm",
        "serve",
        "Qwen/Qwen3.6-27B-AWQ",
        "-tp",
        "2",
        "--max-num-seqs=8",
        "--no-enable-prefix-caching",
        "--speculative-config",
        '{"method": "mtp", "num_speculative_tokens": 3}',
        "--api-key",
        SECRET,
        "--served-model-name",
        "qwen",
        "--a-flag-from-next-year",
        "7",
    ]
    (user_dir / "own.toml").write_text('extends = "qwen36-27b-awq-tp2"\n')  # the owner's own profiles beside the shipped ones
    assert main(["profile", "import", "mine", "--", *words]) == 0
    out = capsys.readouterr().out
    text, argv = imported(store, "mine")
    assert SECRET not in text and TOKEN not in text and SECRET not in out and TOKEN not in out
    env_file = user_dir.parent / "secrets" / "mine.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert f'VLLM_API_KEY="{SECRET}"' in env_file.read_text() and f'HF_TOKEN="{TOKEN}"' in env_file.read_text()
    assert "tensor_parallel_size = 2 # --tensor-parallel-size 2" in text and "max_num_seqs = 8 # --max-num-seqs 8" in text
    assert "enable_prefix_caching = false" in text
    assert 'extra_args = ["--a-flag-from-next-year", "7"]' in text and "--a-flag-from-next-year 7" in out
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert argv[argv.index("--speculative-config") + 1] == '{"method":"mtp","num_speculative_tokens":3}'
    assert "--disable-prefix-caching" in argv and argv[-4:-2] == ["--a-flag-from-next-year", "7"]
    profile = store.load("mine")
    spec = render(profile, OptionTables(("vllm",)).choose(profile).table)
    assert spec.env["VLLM_API_KEY"] == SECRET and spec.env["HF_TOKEN"] == TOKEN  # the launch gets them
    assert SECRET not in spec.display() and TOKEN not in spec.display()  # every shown line hides them
    assert "nearest shipped profile: qwen36-27b-" in out  # a 27B's, whatever its flags: never the 3B's


def test_the_nearest_profile_serves_the_most_alike_model() -> None:
    """Counting flags alone named qwen25-3b-dp2 for a 27B import (its few flags differ least)."""
    from rigctl.profiles.summary import nearest
    from rigctl.profiles.vllm_args import LaunchSpec

    def spec(*argv: str) -> LaunchSpec:
        return LaunchSpec(("vllm", "serve", *argv), {}, "127.0.0.1", 8000, ())

    shipped = {
        "qwen25-3b-dp2": spec("Qwen/Qwen2.5-3B-Instruct", "-dp", "2"),
        "qwen36-27b-fp8-tp2": spec("Qwen/Qwen3.6-27B-FP8", "-tp", "2", "--max-model-len", "131072", "--kv-cache-dtype", "fp8"),
    }
    found = nearest(shipped, spec("Qwen/Qwen3.6-27B-AWQ", "-dp", "2"))
    assert found is not None and found[0] == "qwen36-27b-fp8-tp2"


def test_a_script_with_continuations_exports_and_variables(tmp_path: Path, store: ProfileStore, user_dir: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text(
        "#!/bin/sh\n"
        "# my rig, started from tmux\n"
        "export CUDA_VISIBLE_DEVICES=0,1\n"
        "MODEL=Qwen/Qwen3.6-27B-AWQ\n"
        "source ~/venvs/vllm/bin/activate\n"
        "exec vllm serve $MODEL \\\n"
        "  --tensor-parallel-size 2 \\\n"
        "  --max-model-len 65536   # the apps need 64k\n"
    )
    assert main(["profile", "import", "tmux", "--script", str(script)]) == 0
    text, argv = imported(store, "tmux")
    assert argv[:4] == ["vllm", "serve", "Qwen/Qwen3.6-27B-AWQ", "--tensor-parallel-size"]
    assert 'CUDA_VISIBLE_DEVICES = "0,1"' in text and "max_model_len = 65536" in text
    assert not (user_dir.parent / "secrets").exists()  # nothing secret, no env file


def test_a_running_process_read_from_proc(
    tmp_path: Path, store: ProfileStore, user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real process whose program is a `vllm` (a stand-in that sleeps): its argv and the part of
    its environment vLLM reads come from /proc; PATH, HOME and rigctl's own markers do not."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "HF_TOKEN": TOKEN, "VLLM_USE_DEEP_GEMM": "0", "RIGCTL_PROFILE": "x"}
    with running_vllm(tmp_path, ["serve", "Qwen/Qwen3.6-27B-AWQ", "-tp", "2", "--max-num-seqs", "4"], env) as child:
        assert main(["profile", "import", "running", "--pid", str(child.pid)]) == 0
    fake = tmp_path / "bin" / "vllm"
    out = capsys.readouterr().out
    text, argv = imported(store, "running")
    assert f"imported process {child.pid} as running" in out
    assert 'VLLM_USE_DEEP_GEMM = "0"' in text and "PATH" not in text and "RIGCTL_PROFILE" not in text and TOKEN not in text
    assert f'vllm_command = ["{fake}"]' in text and argv[0] == str(fake)  # the vllm it ran, not whichever is on PATH
    assert "HF_TOKEN" in (user_dir.parent / "secrets" / "running.env").read_text()


def test_no_such_process_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "import", "gone", "--pid", "999999999"]) == 2
    assert capsys.readouterr().err.strip() == "rigctl: no process 999999999"


def test_a_systemd_unit_with_a_drop_in_and_its_environment_file(tmp_path: Path, store: ProfileStore) -> None:
    env_file = tmp_path / "vllm.env"
    env_file.write_text(f'# the hub token\nHF_TOKEN="{TOKEN}"\nVLLM_LOGGING_LEVEL=INFO\n')
    unit = tmp_path / "vllm.service"
    # as `systemctl cat vllm` prints it: the unit, then a drop-in whose empty ExecStart= resets it
    unit.write_text(
        "# /etc/systemd/system/vllm.service\n[Unit]\nDescription=vLLM\n\n[Service]\n"
        'Environment="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" NCCL_P2P_LEVEL=NVL\n'
        f"EnvironmentFile={env_file}\nEnvironmentFile=-/nonexistent/optional.env\n"
        "ExecStart=/opt/vllm/bin/vllm serve old/model\n\n"
        "# /etc/systemd/system/vllm.service.d/override.conf\n[Service]\nExecStart=\n"
        "ExecStart=/opt/vllm/bin/vllm serve Qwen/Qwen3.6-27B-AWQ \\\n  --tensor-parallel-size 2 --kv-cache-dtype fp8_e5m2\n"
    )
    assert main(["profile", "import", "unit", "--unit", str(unit)]) == 0
    text, argv = imported(store, "unit")
    assert argv[:3] == ["/opt/vllm/bin/vllm", "serve", "Qwen/Qwen3.6-27B-AWQ"]
    assert 'PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"' in text and 'NCCL_P2P_LEVEL = "NVL"' in text
    assert 'VLLM_LOGGING_LEVEL = "INFO"' in text and TOKEN not in text


def test_a_compose_service(tmp_path: Path, store: ProfileStore) -> None:
    compose = tmp_path / "compose.yaml"
    compose.write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.33.0\n    ipc: host\n"
        '    command: ["Qwen/Qwen3.6-27B-AWQ", "--tensor-parallel-size", "2", "--max-num-seqs", "8"]\n'
        f"    environment:\n      - HF_TOKEN={TOKEN}\n      - VLLM_ATTENTION_BACKEND=FLASHINFER\n"
        "  webui:\n    image: ghcr.io/open-webui/open-webui\n"
    )
    assert main(["profile", "import", "docker", "--compose", str(compose), "--service", "vllm"]) == 0
    text, argv = imported(store, "docker")
    assert argv[:3] == ["vllm", "serve", "Qwen/Qwen3.6-27B-AWQ"] and "max_num_seqs = 8" in text
    assert "image vllm/vllm-openai:v0.33.0" in text and 'VLLM_ATTENTION_BACKEND = "FLASHINFER"' in text and TOKEN not in text


@pytest.mark.parametrize(
    "args,message",
    [
        ([".hidden", "--", "vllm", "serve", "m"], "'.hidden' is not a profile name"),
        (["qwen36-27b-base", "--", "vllm", "serve", "m"], "is a shipped example's name"),
        (["x", "--", "python3", "train.py"], "not a vLLM launch: python3 train.py"),
        (["x", "--", "vllm", "serve", "--tensor-parallel-size", "2"], "the command line names no model"),
        (["x", "--compose", "missing.yaml"], "missing.yaml"),
        (["x", "--pid", "1", "--", "vllm", "serve", "m"], "give the launch one way: --pid"),
    ],
)
def test_refusals_are_one_line_and_write_nothing(
    args: list[str], message: str, user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["profile", "import", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert list(user_dir.iterdir()) == [] and not (user_dir.parent / "secrets").exists()


def test_a_value_vllm_would_refuse_is_refused_and_the_secrets_file_goes_too(
    user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["profile", "import", "bad", "--", "vllm", "serve", "m", "--api-key", SECRET, "--max-num-seqs", "many"]) == 2
    assert "max_num_seqs: must be an integer" in capsys.readouterr().err
    assert list(user_dir.iterdir()) == [] and list((user_dir.parent / "secrets").iterdir()) == []


def test_an_existing_profile_is_kept_unless_replaced(
    user_dir: Path, store: ProfileStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["profile", "import", "mine", "--", "vllm", "serve", "a/model"]) == 0
    assert main(["profile", "import", "mine", "--", "vllm", "serve", "b/model"]) == 2
    assert "already exists (--replace to write over it)" in capsys.readouterr().err
    assert store.load("mine").model == "a/model"
    assert main(["profile", "import", "mine", "--replace", "--", "vllm", "serve", "b/model"]) == 0
    assert store.load("mine").model == "b/model"


def test_every_shipped_profile_imports_back_to_the_same_launch(table: OptionTable, tmp_path: Path) -> None:
    """The owner's command line is rigctl's own: a shipped profile's rendered launch, imported,
    renders the same argv and environment (the profile is what vLLM was told, nothing lost)."""
    shipped = ProfileStore(user=tmp_path / "none")
    checked = 0
    for name in shipped.names():
        profile = shipped.load(name)
        if profile.model is None:
            continue  # a base to extend, not a launch
        spec = render(profile, table)
        source = from_command_line([*(f"{k}={v}" for k, v in spec.env.items()), *spec.argv], "test")
        result = build_profile(source, table, "2026-12-04")
        user = tmp_path / name
        user.mkdir()
        (user / "back.toml").write_text(result.text)
        again = render(ProfileStore(user=user).load("back"), table)
        assert launch_diff(spec, again) == [], name
        assert result.kept == [], name
        checked += 1
    assert checked >= 8
