"""config.toml: effective settings with their sources, clear errors, comment-keeping saves,
`rigctl config`, and the configured profiles directory in use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rigctl.cli import main
from rigctl.config import load_settings, save_setting
from rigctl.errors import BadInputError
from rigctl.profiles.store import ProfileStore
from tests.support.config_file import write_config

CONFIG = """\
# the box under the desk
[server]
launcher = "systemd"   # vLLM runs as a unit
vllm_command = ["/opt/vllm/bin/vllm"]

[tui]
rig_interval = 2.0
"""


def test_defaults_then_file_then_env_each_with_its_source() -> None:
    assert load_settings().sources["launcher"] == "default"
    path = write_config(CONFIG)
    settings = load_settings(env={"RIGCTL_THEME": "nord"})
    assert settings.launcher == "systemd" and settings.sources["launcher"] == f"{path}:3"
    assert settings.vllm_command == ("/opt/vllm/bin/vllm",) and settings.sources["vllm_command"] == f"{path}:4"
    assert settings.rig_interval == 2.0 and settings.sources["rig_interval"] == f"{path}:7"
    assert settings.theme == "nord" and settings.sources["theme"] == "env RIGCTL_THEME"
    assert settings.boot_timeout == 900.0 and settings.sources["boot_timeout"] == "default"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[tui]\nthem = 1\n", ":2: tui.them: not a setting (in [tui]: rig_interval, metrics_interval, theme)"),
        ('[server]\nlauncher = "podman"\n', ":2: server.launcher: must be one of process, systemd, docker, not 'podman'"),
        ('\n[tui]\nrig_interval = "fast"\n', ":3: tui.rig_interval: must be a non-negative number of seconds"),
        ("[gui]\nx = 1\n", ":1: gui: not a config table"),
        ("[tui\n", "invalid TOML"),
        ('[rigs.box2]\nssh = "-oProxyCommand=x"\n', ":2: rigs.box2.ssh: must be the destination ssh takes"),
        (
            '[rigs.box2]\nssh = "me@box2"\nport = 22\n',
            ":1: rigs.box2.port: not a setting (in [rigs.box2]: ssh, rigctl, ssh_options, url, api_key_env)",
        ),
        ('[rigs.box2]\nssh = "me@box2"\nssh_options = "-p 2222"\n', "rigs.box2.ssh_options: must be a list of ssh arguments"),
        ('[rigs]\nbox2 = "me@box2"\n', ":2: rigs.box2: must be a table"),
        ('[rigs."a b"]\nssh = "me@box2"\n', "a rig's name is letters, digits"),
    ],
)
def test_invalid_config_names_key_and_line(text: str, expected: str) -> None:
    path = write_config(text)
    with pytest.raises(BadInputError) as caught:
        load_settings()
    assert str(path) in str(caught.value) and expected in str(caught.value)


def test_save_keeps_comments_and_refuses_bad_values() -> None:
    path = write_config(CONFIG)
    save_setting("theme", "gruvbox")
    text = path.read_text()
    assert "# the box under the desk" in text and "# vLLM runs as a unit" in text
    assert load_settings().theme == "gruvbox"
    with pytest.raises(BadInputError):
        save_setting("launcher", "podman")
    assert path.read_text() == text  # a refused value leaves the file as it was


def test_config_command_text_and_json() -> None:
    path = write_config(CONFIG)
    env = {**os.environ, "RIGCTL_ENDPOINT": "http://127.0.0.1:9000"}
    result = subprocess.run(
        [sys.executable, "-m", "rigctl", "config", "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    rows = {row["setting"]: row for row in data["settings"]}
    assert data["config_file"] == str(path) and data["config_file_exists"]
    assert rows["server.launcher"] == {"setting": "server.launcher", "value": "systemd", "source": f"{path}:3"}
    assert rows["server.endpoint"]["source"] == "env RIGCTL_ENDPOINT"
    assert rows["docker.image"]["source"] == "default"
    text = subprocess.run([sys.executable, "-m", "rigctl", "config"], capture_output=True, text=True, env=env, timeout=60).stdout
    assert f"config file: {path}" in text
    assert any(line.split()[:2] == ["server.vllm_command", "/opt/vllm/bin/vllm"] for line in text.splitlines())


def test_rigs_are_read_with_their_options_and_shown_by_config(capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(
        '# the second box\n[rigs.box2]\nssh = "me@box2"\nrigctl = "~/.local/bin/rigctl"\nssh_options = ["-p", "2222"]\n'
    )
    (rig,) = load_settings().rigs
    assert (rig.name, rig.ssh, rig.rigctl, rig.ssh_options) == ("box2", "me@box2", "~/.local/bin/rigctl", ("-p", "2222"))
    assert main(["config", "--json"]) == 0
    rows = {row["setting"]: row for row in json.loads(capsys.readouterr().out)["settings"]}
    assert rows["rigs.box2.ssh_options"] == {"setting": "rigs.box2.ssh_options", "value": ["-p", "2222"], "source": f"{path}:2"}


def test_config_command_reports_a_broken_file(capsys: pytest.CaptureFixture[str]) -> None:
    write_config("[tui]\nthem = 1\n")
    assert main(["config"]) == 2
    assert "tui.them: not a setting" in capsys.readouterr().err


def test_profiles_dir_setting_is_where_profiles_are_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "my-profiles"
    mine.mkdir()
    (mine / "mine.toml").write_text('extends = "qwen36-27b-awq-tp2"\ndescription = "mine"\n')
    write_config(f'[profiles]\ndir = "{mine}"\n')
    assert ProfileStore().user == mine
    assert main(["profile", "list"]) == 0
    assert "mine" in capsys.readouterr().out.split()
