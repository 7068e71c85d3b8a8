"""systemd and docker cannot run here: their exact commands and files are the test."""

from __future__ import annotations

import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from rigctl.profiles.store import ProfileStore
from rigctl.profiles.vllm_args import LaunchSpec, render
from rigctl.serve.launcher_docker import DockerLauncher
from rigctl.serve.launcher_systemd import SystemdLauncher, systemd_quote
from rigctl.vllm.options import load_option_table


class Recorder:
    def __init__(self, answers: dict[str, str] | None = None) -> None:
        self.calls: list[list[str]] = []
        self.answers = answers or {}

    def __call__(self, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        out = next((v for k, v in self.answers.items() if k in " ".join(argv)), "")
        return subprocess.CompletedProcess(list(argv), 0, out, "")


@pytest.fixture
def spec(isolated_dirs: Path) -> LaunchSpec:
    user = isolated_dirs / "config" / "rigctl" / "profiles"
    user.mkdir(parents=True)
    (user / "secret.toml").write_text('extends = "qwen36-27b-4090-tp2-mtp"\n[vllm]\napi_key = "sk-1"\n[env]\nHF_TOKEN = "hf_abc"\n')
    return render(ProfileStore().load("secret"), load_option_table(), ("/opt/vllm/bin/vllm",))


def test_systemd_dropin_envfile_and_commands(spec: LaunchSpec, tmp_path: Path) -> None:
    runner = Recorder({"MainPID": "4242\n"})
    launcher = SystemdLauncher("vllm.service", user=True, dropin_dir=str(tmp_path / "vllm.service.d"), runner=runner)
    record = launcher.start(spec, "secret")
    dropin = (tmp_path / "vllm.service.d" / "rigctl.conf").read_text()
    assert dropin.splitlines()[1:4] == ["[Service]", f"EnvironmentFile={launcher.env_file}", "ExecStart="]
    assert dropin.splitlines()[4].startswith("ExecStart=/opt/vllm/bin/vllm serve Qwen/Qwen3.6-27B-AWQ --tensor-para")
    assert '--speculative-config "{\\"method\\":\\"mtp\\",\\"num_speculative_tokens\\":3}"' in dropin
    env = launcher.env_file.read_text()
    assert 'HF_TOKEN="hf_abc"' in env and stat.S_IMODE(launcher.env_file.stat().st_mode) == 0o600
    assert runner.calls[:2] == [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "restart", "vllm.service"]]
    assert record.pid == 4242 and record.unit == "vllm.service" and "sk-1" not in " ".join(record.argv)
    assert launcher.journal_command(1700000000.0) == [
        "journalctl",
        "--user-unit",
        "vllm.service",
        "-o",
        "cat",
        "--no-pager",
        "-f",
        "--since",
        "@1700000000",
    ]
    launcher.stop(record, 30)
    assert runner.calls[-1] == ["systemctl", "--user", "stop", "vllm.service"]


def test_systemd_exit_status_and_quoting() -> None:
    runner = Recorder({"ActiveState": "ActiveState=failed\nExecMainStatus=1\n"})
    launcher = SystemdLauncher("vllm.service", runner=runner)
    assert launcher.exit_code(None) == 1  # type: ignore[arg-type]
    assert systemd_quote("100%") == "100%%" and systemd_quote("$HOME") == "$$HOME"
    assert systemd_quote('a b"c') == '"a b\\"c"'
    assert launcher.dropin == Path("/etc/systemd/system/vllm.service.d/rigctl.conf")


def test_docker_run_publishes_on_the_profile_host_only(spec: LaunchSpec, tmp_path: Path) -> None:
    runner = Recorder()
    launcher = DockerLauncher("vllm/vllm-openai:v0.33.0", "rigctl-vllm", str(tmp_path / "hf"), runner=runner)
    launcher.start(spec, "secret")
    assert runner.calls[0] == ["docker", "rm", "-f", "rigctl-vllm"]
    run = runner.calls[1]
    assert run[:12] == [
        "docker",
        "run",
        "-d",
        "--name",
        "rigctl-vllm",
        "--gpus",
        "all",
        "--ipc=host",
        "-p",
        "127.0.0.1:8000:8000",
        "-v",
        f"{tmp_path / 'hf'}:/root/.cache/huggingface",
    ]
    assert run[12:18] == ["--env-file", str(launcher.env_file), "--entrypoint", "vllm", "vllm/vllm-openai:v0.33.0", "serve"]
    assert run[run.index("--host") + 1] == "0.0.0.0"  # inside the container; the host sees 127.0.0.1 only
    assert "hf_abc" not in " ".join(run) and "HF_TOKEN=hf_abc" in launcher.env_file.read_text()
    assert launcher.logs_command(1700000000.0) == ["docker", "logs", "-f", "--since", "1700000000", "rigctl-vllm"]
    launcher.stop(None, 30)  # type: ignore[arg-type]
    assert runner.calls[-2:] == [["docker", "stop", "-t", "30", "rigctl-vllm"], ["docker", "rm", "rigctl-vllm"]]


def _spec_with(isolated_dirs: Path, name: str, body: str) -> LaunchSpec:
    user = isolated_dirs / "config" / "rigctl" / "profiles"
    user.mkdir(parents=True, exist_ok=True)
    (user / f"{name}.toml").write_text(f'extends = "qwen36-27b-4090-tp2-mtp"\n{body}')
    return render(ProfileStore().load(name), load_option_table(), ("/opt/vllm/bin/vllm",))


def test_a_multi_line_argv_value_stays_in_its_execstart_word(isolated_dirs: Path, tmp_path: Path) -> None:
    template = "{% for m in messages %}\n{{ m.content }}\nExecStartPre=/bin/evil\n{% endfor %}"
    spec = _spec_with(isolated_dirs, "tmpl", f'[vllm]\nchat_template = """{template}"""\n')
    launcher = SystemdLauncher("vllm.service", user=True, dropin_dir=str(tmp_path / "d"), runner=Recorder())
    assert not [p for p in launcher.check(spec) if "line break" in p]  # a newline in argv is fine: it is escaped
    launcher.start(spec, "tmpl")
    lines = (tmp_path / "d" / "rigctl.conf").read_text().splitlines()
    assert len(lines) == 5 and not any(line.startswith("ExecStartPre") for line in lines)
    assert '"{%% for m in messages %%}\\n{{ m.content }}\\nExecStartPre=/bin/evil\\n{%% endfor %%}"' in lines[4]


@pytest.mark.parametrize("kind", ["systemd", "docker"])
def test_an_env_value_with_a_line_break_is_refused_naming_its_key(isolated_dirs: Path, tmp_path: Path, kind: str) -> None:
    spec = _spec_with(isolated_dirs, "nl", '[env]\nSAFE = "x"\nEXTRA = "a\\nLD_PRELOAD=/tmp/evil.so"\n')
    launcher = (
        SystemdLauncher("vllm.service", user=True, dropin_dir=str(tmp_path / "d"), runner=Recorder())
        if kind == "systemd"
        else DockerLauncher("img", "c", str(tmp_path), runner=Recorder())
    )
    problems = launcher.check(spec)
    assert any(p.startswith("env.EXTRA: the value holds a line break") for p in problems), problems
    with pytest.raises(ValueError, match="EXTRA"):
        launcher.start(spec, "nl")
    env_file = launcher.env_file
    assert not env_file.exists() or "LD_PRELOAD" not in env_file.read_text()


def test_a_dropin_that_names_a_secret_is_not_world_readable(isolated_dirs: Path, tmp_path: Path) -> None:
    spec = _spec_with(isolated_dirs, "keys", '[vllm]\napi_key = ["sk-a", "sk-b"]\n')  # several keys stay in argv
    launcher = SystemdLauncher("vllm.service", user=True, dropin_dir=str(tmp_path / "d"), runner=Recorder())
    launcher.start(spec, "keys")
    assert stat.S_IMODE((tmp_path / "d" / "rigctl.conf").stat().st_mode) == 0o600
    plain = _spec_with(isolated_dirs, "plain", "")
    launcher.start(plain, "plain")
    assert stat.S_IMODE((tmp_path / "d" / "rigctl.conf").stat().st_mode) == 0o644
