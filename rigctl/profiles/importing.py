"""A profile from the vLLM the owner already runs, found by profiles/import_sources.py (a command
line, a script, a running process, a systemd unit, a compose service).

Its command line is read as vLLM reads it (rigctl/vllm/argv.py, by the option table); each key of
the profile carries a comment saying where it came from. Secrets (an --api-key, HF_TOKEN) never
go into the profile: they go to a 0600 environment file the profile names (`[rigctl] env_file`).
A flag the option table does not know is kept verbatim in `[rigctl] extra_args` and said. The core
here builds text; the CLI reads /proc, the unit and the compose file."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import tomlkit

from rigctl.errors import BadInputError, one_line
from rigctl.profiles.import_sources import API_SERVER_MODULES, OWN_ENV_PREFIX, SECRET_OPTION_ENV, ImportSource
from rigctl.redact import is_secret_env, is_secret_option, redact_argv
from rigctl.vllm.argv import read_serve_argv
from rigctl.vllm.options import OptionTable, VllmOption


@dataclass
class ImportedProfile:
    text: str  # the profile file, comments included
    secrets: dict[str, str]  # for the 0600 env file; never in `text`
    kept: list[str] = field(default_factory=list)  # flags kept verbatim in extra_args
    notes: list[str] = field(default_factory=list)  # what the owner should know, one line each


def _typed(option: VllmOption, raw: str) -> Any:
    """A flag's text as the TOML value a profile writes for it."""
    if option.kind in ("bool", "flag"):
        return raw.lower() not in ("false", "0", "no") if raw else True
    if option.nargs == "?" and raw == "":
        return True
    if option.nargs == "+":
        items = [_typed_scalar(option, w) for w in raw.split()]
        return items[0] if len(items) == 1 else items
    return _typed_scalar(option, raw)


def _typed_scalar(option: VllmOption, raw: str) -> Any:
    try:
        if option.type == "int":
            return int(raw)
        if option.type == "float":
            return float(raw)
        if option.type == "json":
            value = json.loads(raw)
            return value if isinstance(value, (dict, list)) else raw
    except ValueError:
        return raw  # validation names it, against the same option
    if option.type in ("human_int", "human_int_or_auto") and re.fullmatch(r"-?\d+", raw):
        return int(raw)
    return raw  # sizes like 32k stay as written: vLLM reads them, and so does validation


def inline_toml(value: Any) -> Any:
    """Tables stay inline (`{ method = "mtp" }`), as a person writes them on a key's line: for an
    imported key and for `profile set`."""
    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        for key, item in value.items():
            inline[key] = inline_toml(item)
        return inline
    if isinstance(value, list):
        return [inline_toml(v) for v in value]
    return value


def _commented(value: Any, comment: str) -> Any:
    item = tomlkit.item(inline_toml(value))
    item.comment(one_line(comment))
    return item


def build_profile(source: ImportSource, table: OptionTable, today: str) -> ImportedProfile:
    """The profile text for `source`, checked against `table` by the caller (as any edit is)."""
    read = read_serve_argv(source.argv, table)
    if not read.model:
        raise BadInputError(f"{source.origin}: the command line names no model (vllm serve MODEL, or --model MODEL)")
    program = list(source.argv[: source.argv.index("serve")]) if "serve" in source.argv else []
    doc = tomlkit.document()
    shown = shlex.join(redact_argv(source.argv))
    doc.add(tomlkit.comment(f"Imported by `{source.how}` on {today} from {source.origin}:"))
    doc.add(tomlkit.comment(one_line(shown if len(shown) <= 400 else shown[:400] + " ...")))
    doc.add(tomlkit.comment("Each key says the flag it came from; `rigctl profile show` and `profile validate` check it."))
    doc["description"] = f"imported from {source.origin}"
    doc["model"] = read.model
    vllm = tomlkit.table()
    rigctl_table = tomlkit.table()
    secrets: dict[str, str] = {}
    imported = ImportedProfile("", secrets, notes=list(source.notes))
    env = tomlkit.table()
    for key, setting in sorted(source.env.items()):
        if is_secret_env(key):
            secrets[key] = setting
            imported.notes.append(f"env {key}: went to the env file, not into the profile")
        elif key.startswith(OWN_ENV_PREFIX):
            continue
        else:
            env[key] = _commented(setting, f"from {source.origin}")
    for flag, raw in read.flags.items():
        if flag in read.unknown or flag == "--model":
            continue
        found = table.resolve(flag.lstrip("-").replace("-", "_"))
        if found is None:
            continue
        option, negated = found
        written = f"{flag} {raw}".strip()
        if option.dest in SECRET_OPTION_ENV or is_secret_option(option.dest):
            name = SECRET_OPTION_ENV.get(option.dest, option.dest.upper())
            if name in secrets and secrets[name] != raw:
                # vLLM takes the flag over its environment twin: the served key is the flag's
                imported.notes.append(f"{flag} and env {name} differ: vLLM used the flag's, and so does the profile")
            secrets[name] = raw
            imported.notes.append(f"{flag}: its value went to the env file as {name} (vLLM reads it there), not into the profile")
            continue
        value = False if negated else _typed(option, raw)
        vllm[option.dest] = _commented(
            value, written if option.dest not in ("host", "port") else written + " (where the apps call)"
        )
    extra: list[str] = []
    for flag in read.unknown:
        extra.append(flag)
        if read.flags.get(flag):
            extra.append(read.flags[flag])
        imported.kept.append(f"{flag} {read.flags.get(flag, '')}".strip())
    if extra:
        rigctl_table["extra_args"] = _commented(
            extra, f"flags this vLLM's option table ({table.version}) does not know, kept verbatim"
        )
    if program and program[-1:] != ["vllm"] and program[-1].endswith("/vllm"):
        # a running vllm shows as `/venv/bin/python3 /venv/bin/vllm serve ...` (its script's
        # interpreter first): the script alone starts the same vLLM
        rigctl_table["vllm_command"] = _commented([program[-1]], "the vllm it ran")
    elif any(m in source.argv for m in API_SERVER_MODULES):
        python = source.argv[0]
        if python.endswith(("/python", "/python3")):
            rigctl_table["vllm_command"] = _commented(
                [python.rsplit("/", 1)[0] + "/vllm"], "the vllm beside the python that ran the api_server module"
            )
        imported.notes.append(
            "it ran vLLM's api_server module; rigctl starts `vllm serve`, the same server (its command line is kept)"
        )
    if secrets:
        rigctl_table["env_file"] = _commented("", "filled in when written: the 0600 file holding the secrets")
    doc.add(tomlkit.nl())
    doc["vllm"] = vllm
    if len(env):
        doc["env"] = env
    if len(rigctl_table):
        doc["rigctl"] = rigctl_table
    if "--host" in read.flags:
        imported.notes.append(
            "host/port: kept as it served (behind `rigctl gateway` rigctl moves vLLM to 127.0.0.1 and the apps keep this address)"
        )
    imported.text = tomlkit.dumps(doc)
    return imported


def with_env_file(text: str, env_file: str) -> str:
    """The imported text with `[rigctl] env_file` set to where the secrets were written."""
    doc = tomlkit.parse(text)
    rigctl_table = doc["rigctl"]
    assert isinstance(rigctl_table, dict)
    rigctl_table["env_file"] = _commented(env_file, "the 0600 file holding the secrets (never the profile itself)")
    return tomlkit.dumps(doc)
