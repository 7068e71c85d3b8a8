"""Profile -> (argv, env) for `vllm serve`: an argv list, never a shell string.

Order is deterministic: the model, the first-class knobs, every other option by name,
then --host 127.0.0.1 unless the profile chose a host. Secrets go to vLLM through its
environment where vLLM reads them there (VLLM_API_KEY, HF_TOKEN), so they are not in `ps`;
anything meant for display or logs is redacted.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from rigctl.profiles.envfile import profile_file_env
from rigctl.profiles.schema import FIRST_CLASS, Profile, ProfileError
from rigctl.profiles.settings import ResolvedSettings
from rigctl.profiles.validate import validated
from rigctl.redact import (
    REDACTED,
    is_secret_env,
    is_secret_option,
    redact_argv,
    redact_env,
)
from rigctl.vllm.options import OptionTable, VllmOption

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
SECRET_OPTIONS = frozenset({"api_key", "hf_token"})
# vLLM reads these from its environment when the option is not given: the same effect,
# and the value stays out of the process list.
SECRET_ENV_FOR = {"api_key": "VLLM_API_KEY", "hf_token": "HF_TOKEN"}


@dataclass(frozen=True)
class LaunchSpec:
    argv: tuple[str, ...]  # program first: ("vllm", "serve", MODEL, ...)
    env: dict[str, str]  # the profile's environment only; the launcher adds it to its own
    host: str
    port: int
    served_names: tuple[str, ...]
    secret_values: tuple[str, ...] = ()

    def redacted_argv(self) -> list[str]:
        return redact_argv(REDACTED if arg in self.secret_values else arg for arg in self.argv)

    def redacted_env(self) -> dict[str, str]:
        return redact_env(self.env)

    def display(self) -> str:
        """A line a user could paste into a shell (quoted for display, secrets redacted)."""
        assignments = [f"{k}={shlex.quote(v)}" for k, v in sorted(self.redacted_env().items())]
        return " ".join([*assignments, shlex.join(self.redacted_argv())])


def _scalar_text(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def option_args(option: VllmOption, value: Any) -> list[str]:
    """The argv tokens for one option set to `value` (value already validated)."""
    if option.kind == "bool":
        if value:
            return [option.flag]
        return [option.negative] if option.negative else []
    if option.kind == "flag":
        return [option.flag] if value else []
    if option.kind == "append":
        items = value if isinstance(value, list) else [value]
        return [token for item in items for token in (option.flag, str(item))]
    if option.nargs == "+":
        items = value if isinstance(value, list) else [value]
        return [option.flag, *(_scalar_text(i) for i in items)]
    if option.nargs == "?" and value is True:
        return [option.flag]
    if option.type == "json" and not isinstance(value, str):
        text = json.dumps(value, separators=(",", ":"))
    else:
        text = _scalar_text(value)
    # "--max-model-len -1" would read as a flag; the = form keeps it a value.
    return [f"{option.flag}={text}"] if text.startswith("-") else [option.flag, text]


def profile_command(profile: Profile) -> tuple[str, ...] | None:
    """The profile's own `[rigctl] vllm_command` (a list, or a string split like a shell would)."""
    value = profile.rigctl.get("vllm_command")
    if isinstance(value, str) and value.strip():
        return tuple(shlex.split(value))
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def render(profile: Profile, table: OptionTable, vllm_command: tuple[str, ...] = ("vllm",)) -> LaunchSpec:
    """The launch of a valid profile; ProfileError (every error at once) otherwise. The program
    is the profile's own `[rigctl] vllm_command`, else `vllm_command` (config or simulator)."""
    settings, diagnostics = validated(profile, table)
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise ProfileError(errors)
    return launch(profile, settings, vllm_command)


def launch(profile: Profile, settings: ResolvedSettings, vllm_command: tuple[str, ...] = ("vllm",)) -> LaunchSpec:
    """The launch of a profile whose settings were resolved and found without error (render, or
    the checked profile, which resolved them once)."""
    order = [d for d in FIRST_CLASS if d in settings] + sorted(d for d in settings if d not in FIRST_CLASS)
    argv: list[str] = [*(profile_command(profile) or vllm_command), "serve", str(profile.model)]
    file_env = profile_file_env(profile)  # the secrets kept out of the profile: every value is one
    secrets: list[str] = [v for v in file_env.values() if v]
    env = {**file_env, **{k: str(v) for k, v in sorted(profile.env.items())}}
    for dest in order:
        setting = settings[dest]
        if dest in SECRET_OPTIONS or is_secret_option(dest):
            values = setting.value if isinstance(setting.value, list) else [setting.value]
            secrets += [str(v) for v in values if not isinstance(v, bool)]
            if dest in SECRET_ENV_FOR and len(values) == 1 and isinstance(values[0], str):
                env[SECRET_ENV_FOR[dest]] = values[0]
                continue
        argv += option_args(setting.option, setting.value)
    extra = profile.rigctl.get("extra_args")
    if isinstance(extra, list):  # flags this vLLM's table does not know, as the owner wrote them
        argv += [str(a) for a in extra]
    host = str(settings["host"].value) if "host" in settings else DEFAULT_HOST
    if "host" not in settings and "uds" not in settings:
        argv += ["--host", DEFAULT_HOST]
    port = int(settings["port"].value) if "port" in settings else DEFAULT_PORT
    names = settings["served_model_name"].value if "served_model_name" in settings else [profile.model]
    env = dict(sorted(env.items()))
    secrets += [v for k, v in env.items() if is_secret_env(k)]
    return LaunchSpec(
        argv=tuple(argv),
        env=env,
        host=host,
        port=port,
        served_names=tuple(str(n) for n in (names if isinstance(names, list) else [names])),
        secret_values=tuple(secrets),
    )


def moved_to(spec: LaunchSpec, port: int) -> LaunchSpec:
    """The same launch on 127.0.0.1:`port`: behind the front door, which takes the profile's own
    address for the apps. The profile's --host and --port (either spelling) give way; nothing else
    in the argv changes."""
    argv: list[str] = []
    skip = False
    for arg in spec.argv:
        if skip:
            skip = False
            continue
        if arg in ("--host", "--port"):
            skip = True
            continue
        if arg.startswith(("--host=", "--port=")):
            continue
        argv.append(arg)
    argv += ["--host", DEFAULT_HOST, "--port", str(port)]
    return LaunchSpec(
        argv=tuple(argv),
        env=spec.env,
        host=DEFAULT_HOST,
        port=port,
        served_names=spec.served_names,
        secret_values=spec.secret_values,
    )
