"""An import serves what ran: every source (a command line, a script, a running process, a systemd
unit, a compose file) with a secret given both as a flag and in the environment imports the flag's
(vLLM's own precedence), and renders back the same launch; compose variables are interpolated as
`docker compose config` does or refused by name; a unit's PATH, HOME and LD_PRELOAD are left out
and said; a command line takes this shell's exported environment and says so; a bad byte, a line
break in a secret or a name too long is one line and writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rigctl.cli import main
from rigctl.profiles.envfile import parse_env_text
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.vllm_args import render
from rigctl.profiles.vllm_version import OptionTables
from tests.profiles.conftest import fake_vllm, running_vllm

FLAG_KEY, ENV_KEY = "sk-the-flags-key", "sk-the-environments-key"
FLAG_HF, ENV_HF = "hf_the_flags_token", "hf_the_environments_token"
LAUNCH = ["serve", "Qwen/Qwen3.6-27B-AWQ", "--tensor-parallel-size", "2", "--max-num-seqs", "4"]
SECRET_FLAGS = ["--api-key", FLAG_KEY, "--hf-token", FLAG_HF]


def by_argv(tmp_path: Path) -> list[str]:
    return ["--", f"VLLM_API_KEY={ENV_KEY}", f"HF_TOKEN={ENV_HF}", "vllm", *LAUNCH, *SECRET_FLAGS]


def by_script(tmp_path: Path) -> list[str]:
    script = tmp_path / "serve.sh"
    script.write_text(
        f"#!/bin/sh\nexport VLLM_API_KEY={ENV_KEY}\nexport HF_TOKEN={ENV_HF}\nexec vllm {' '.join(LAUNCH + SECRET_FLAGS)}\n"
    )
    return ["--script", str(script)]


def by_unit(tmp_path: Path) -> list[str]:
    unit = tmp_path / "vllm.service"
    unit.write_text(
        f"[Service]\nEnvironment=VLLM_API_KEY={ENV_KEY} HF_TOKEN={ENV_HF} PATH=/opt/bin HOME=/srv LD_PRELOAD=/opt/x.so\n"
        f"ExecStart=/opt/vllm/bin/vllm {' '.join(LAUNCH + SECRET_FLAGS)}\n"
    )
    return ["--unit", str(unit)]


def by_compose(tmp_path: Path) -> list[str]:
    compose = tmp_path / "compose.yaml"
    words = ", ".join(f'"{w}"' for w in LAUNCH[1:] + SECRET_FLAGS)
    compose.write_text(
        f"services:\n  vllm:\n    image: vllm/vllm-openai:v0.33.0\n    command: [{words}]\n"
        f"    environment:\n      VLLM_API_KEY: {ENV_KEY}\n      HF_TOKEN: {ENV_HF}\n"
    )
    return ["--compose", str(compose), "--service", "vllm"]


SOURCES: dict[str, Callable[[Path], list[str]]] = {"argv": by_argv, "script": by_script, "unit": by_unit, "compose": by_compose}


def secrets_of(user_dir: Path, name: str) -> dict[str, str]:
    return parse_env_text((user_dir.parent / "secrets" / f"{name}.env").read_text())


def launched(store: ProfileStore, name: str) -> list[str]:
    profile = store.load(name)
    return list(render(profile, OptionTables(("vllm",)).choose(profile).table).argv)


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_source_serves_the_flags_secret_and_the_same_launch(
    source: str, tmp_path: Path, user_dir: Path, store: ProfileStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["profile", "import", "mine", *SOURCES[source](tmp_path)]) == 0
    out = capsys.readouterr().out
    assert secrets_of(user_dir, "mine") == {"VLLM_API_KEY": FLAG_KEY, "HF_TOKEN": FLAG_HF}  # the flag wins, as in vLLM
    assert "--api-key and env VLLM_API_KEY differ: vLLM used the flag's, and so does the profile" in out, out
    assert "--hf-token and env HF_TOKEN differ: vLLM used the flag's" in out, out
    text = store.path_for("mine").read_text()
    assert all(secret not in text + out for secret in (FLAG_KEY, ENV_KEY, FLAG_HF, ENV_HF))
    argv = launched(store, "mine")
    assert argv[argv.index("serve") :][:2] == ["serve", "Qwen/Qwen3.6-27B-AWQ"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2" and argv[argv.index("--max-num-seqs") + 1] == "4"


def test_a_running_process_serves_the_flags_secret(
    tmp_path: Path, user_dir: Path, store: ProfileStore, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "VLLM_API_KEY": ENV_KEY, "HF_TOKEN": ENV_HF}
    with running_vllm(tmp_path, [*LAUNCH, *SECRET_FLAGS], env) as child:
        assert main(["profile", "import", "mine", "--pid", str(child.pid)]) == 0
    out = capsys.readouterr().out
    assert secrets_of(user_dir, "mine") == {"VLLM_API_KEY": FLAG_KEY, "HF_TOKEN": FLAG_HF}
    assert "env HOME, PATH of process" in out and "not kept" in out, out


def test_a_units_login_environment_is_left_out_and_said(
    tmp_path: Path, store: ProfileStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["profile", "import", "mine", *by_unit(tmp_path)]) == 0
    out = capsys.readouterr().out
    text = store.path_for("mine").read_text()
    assert "PATH" not in text and "HOME" not in text and "LD_PRELOAD" not in text, text
    assert "env HOME, LD_PRELOAD, PATH of" in out and "not kept" in out, out


def test_compose_variables_are_interpolated_as_docker_compose_does(
    tmp_path: Path, user_dir: Path, store: ProfileStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".env").write_text(f"API_KEY={ENV_KEY}\nSEQS=6\nNAME=from-dotenv\n")
    monkeypatch.setenv("NAME", "from-the-shell")  # the shell's environment over the .env
    compose = tmp_path / "compose.yaml"
    compose.write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.33.0\n"
        '    command: ["${MODEL:-Qwen/Qwen3.6-27B-AWQ}", "--max-num-seqs", "${SEQS}", "--served-model-name", "${NAME}",'
        ' "--api-key", "${API_KEY?the apps need it}", "--tensor-parallel-size", "$${TP_IS_LITERAL:-2}"]\n'
    )
    assert main(["profile", "import", "mine", "--compose", str(compose), "--service", "vllm"]) == 2
    err = capsys.readouterr().err
    assert "tensor_parallel_size: must be an integer" in err, err  # `$$` is a literal `$`: `${TP_IS_LITERAL:-2}` stayed
    compose.write_text(compose.read_text().replace("$${TP_IS_LITERAL:-2}", "2"))
    assert main(["profile", "import", "mine", "--compose", str(compose), "--service", "vllm"]) == 0
    argv = launched(store, "mine")
    assert argv[argv.index("serve") + 1] == "Qwen/Qwen3.6-27B-AWQ" and argv[argv.index("--max-num-seqs") + 1] == "6"
    assert argv[argv.index("--served-model-name") + 1] == "from-the-shell"
    assert secrets_of(user_dir, "mine") == {"VLLM_API_KEY": ENV_KEY}


@pytest.mark.parametrize(
    "word, said",
    [
        ("${UNSET_VAR}", "${UNSET_VAR} is not set (in this shell or the .env beside the file)"),
        ("${UNSET_VAR?the apps need a key}", "${UNSET_VAR} is required: the apps need a key"),
        ("${EMPTY_VAR:?empty is no key}", "${EMPTY_VAR} is required: empty is no key"),
    ],
)
def test_a_compose_variable_without_a_value_is_refused_by_name(
    word: str, said: str, tmp_path: Path, user_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("EMPTY_VAR", "")
    monkeypatch.delenv("UNSET_VAR", raising=False)
    compose = tmp_path / "compose.yaml"
    compose.write_text(f'services:\n  vllm:\n    command: ["m", "--api-key", "{word}"]\n')
    assert main(["profile", "import", "mine", "--compose", str(compose), "--service", "vllm"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0], err
    assert list(user_dir.iterdir()) == []


def test_a_command_line_takes_this_shells_exported_environment(
    user_dir: Path, store: ProfileStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", ENV_KEY)
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")
    assert main(["profile", "import", "mine", "--", "vllm", *LAUNCH]) == 0
    out = capsys.readouterr().out
    assert "env VLLM_API_KEY, VLLM_LOGGING_LEVEL: taken from this shell's environment" in out, out
    assert secrets_of(user_dir, "mine") == {"VLLM_API_KEY": ENV_KEY}
    assert 'VLLM_LOGGING_LEVEL = "DEBUG"' in store.path_for("mine").read_text()


@pytest.mark.parametrize(
    "args, said",
    [
        (
            ["mine", "--", "vllm", "serve", "m", "--api-key", "two\nlines"],
            "a value with a line break cannot go into an environment file",
        ),
        (["x" * 300, "--", "vllm", "serve", "m"], "is not a profile name"),
    ],
)
def test_a_bad_value_or_name_is_one_line_and_writes_nothing(
    args: list[str], said: str, user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["profile", "import", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0], err
    assert list(user_dir.iterdir()) == [] and not list((user_dir.parent / "secrets").glob("*.env"))


def test_a_process_whose_secret_is_not_text_is_one_line(tmp_path: Path, user_dir: Path) -> None:
    """Bytes that are not UTF-8 in what the import keeps (decoded with replacement, a key would be
    silently another key): one line, nothing written."""
    script = (
        "import os, subprocess, sys\n"
        "env = {b'PATH': os.environb[b'PATH'], b'VLLM_API_KEY': b'sk-\\xff\\xfe'}\n"
        f"child = subprocess.Popen([{str(fake_vllm(tmp_path))!r}, 'serve', 'm'], env=env)\n"
        "print(child.pid, flush=True); child.wait()\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        pid = int(holder.stdout.readline())
        deadline = time.monotonic() + 30
        while b"serve" not in Path(f"/proc/{pid}/cmdline").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)
        done = subprocess.run(
            [sys.executable, "-m", "rigctl", "profile", "import", "mine", "--pid", str(pid)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(holder.pid)], check=False)
        holder.kill()
        holder.wait()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert (
        done.stderr.strip()
        == f"rigctl: process {pid}: env VLLM_API_KEY's value is not UTF-8 text: rigctl cannot carry it into a profile"
    )
    assert list(user_dir.iterdir()) == []
