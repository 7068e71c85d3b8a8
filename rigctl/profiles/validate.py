"""Checking a resolved profile against vLLM's real options and against the rig.

Every problem is reported at once, each naming its file, line and key. Warnings (lints)
never block; errors do.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from rigctl.gpu.model import RigInfo
from rigctl.profiles.options import (
    MTP_ALIASES,
    REMOVED,
    SPEC_METHODS,
    OptionTable,
    VllmOption,
    parse_human_int,
    versions_having,
)
from rigctl.profiles.schema import Diagnostic, Profile


@dataclass(frozen=True)
class Setting:
    """One [vllm] key resolved to its option; `value` already accounts for a negative key."""

    key: str
    option: VllmOption
    value: Any


def _json_able(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def check_value(option: VllmOption, value: Any, table: OptionTable) -> str | None:
    """Why `value` is wrong for `option`, or None."""
    kind, typ = option.kind, option.type
    if kind in ("bool", "flag"):
        return None if isinstance(value, bool) else "must be true or false"
    if kind == "append":
        items = value if isinstance(value, list) else [value]
        return None if all(isinstance(i, str) for i in items) else "must be a string or a list of strings"
    if option.nargs == "+":
        items = value if isinstance(value, list) else [value]
        if not items or not all(_scalar(i) for i in items):
            return "must be a value or a non-empty list of values"
        return None
    if typ == "json":
        if isinstance(value, (dict, list)):
            return None if _json_able(value) else "must hold only JSON values (no dates or times)"
        if isinstance(value, str):
            try:
                json.loads(value)
                return None
            except ValueError:
                return "must be a TOML table or a JSON string"
        return "must be a TOML table or a JSON string"
    if typ == "int":
        return None if isinstance(value, int) and not isinstance(value, bool) else "must be an integer"
    if typ == "float":
        return None if _scalar(value) and not isinstance(value, str) else "must be a number"
    if typ in ("human_int", "human_int_or_auto"):
        if typ == "human_int_or_auto" and (value == "auto" or value == -1):
            return None
        if parse_human_int(value) is None:
            extra = ", 'auto' or -1" if typ == "human_int_or_auto" else ""
            return f"must be an integer or a size like 32k (=32,000) or 32K (=32,768){extra}"
        return None
    if option.nargs == "?" and value is True:
        return None
    if not _scalar(value):
        return "must be a single value"
    text = str(value)
    if option.choices and text not in option.choices:
        return _not_one_of(text, option.choices)
    known = option.known or _extra_known(option, table)
    if known and text not in known and not option.open_choices:
        return _not_one_of(text, known, f" (vLLM {table.version})")
    return None


def _extra_known(option: VllmOption, table: OptionTable) -> tuple[str, ...] | None:
    if option.dest == "quantization":
        return table.quantization_methods or None
    if option.dest == "kv_cache_dtype":
        return table.kv_cache_dtypes or None
    return None


def _not_one_of(text: str, values: tuple[str, ...], where: str = "") -> str:
    import difflib

    close = difflib.get_close_matches(text, values, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    if text == "auto_round":
        hint = "; AutoRound checkpoints load as `inc` (the `auto_round` name is gone)"
    shown = ", ".join(values) if len(values) <= 12 else ", ".join(values[:12]) + ", ..."
    return f"{text!r} is not one of {shown}{where}{hint}"


def resolve_settings(profile: Profile, table: OptionTable) -> tuple[dict[str, Setting], list[Diagnostic]]:
    """[vllm] keys -> their options, with every unknown, removed or duplicated key reported."""
    settings: dict[str, Setting] = {}
    problems: list[Diagnostic] = []
    for key, value in profile.vllm.items():
        dotted = f"vllm.{key}"
        norm = key.replace("-", "_")
        if norm in ("model", "model_tag"):
            problems.append(profile.diagnostic("error", dotted, "set the top-level `model` key instead "
                                               "(vllm serve takes the model as its positional argument)"))
            continue
        if norm in REMOVED and table.resolve(norm) is None:
            version, hint = REMOVED[norm]
            problems.append(profile.diagnostic("error", dotted, f"removed from vllm serve in {version}; {hint}"))
            continue
        found = table.resolve(norm)
        if found is None:
            close = table.closest(norm)
            hint = f"; did you mean {close}?" if close else ""
            elsewhere = [v for v in versions_having(norm) if v != table.version]
            where = f" of vLLM {table.version} (vLLM {', '.join(elsewhere)} has it)" if elsewhere else ""
            problems.append(profile.diagnostic("error", dotted, f"not a vllm serve option{where}{hint}"))
            continue
        option, negated = found
        if negated:
            if not isinstance(value, bool):
                problems.append(profile.diagnostic("error", dotted, "must be true or false"))
                continue
            value = not value
        if option.dest in settings:
            other = settings[option.dest].key
            problems.append(profile.diagnostic("error", dotted, f"sets the same option as `{other}`"))
            continue
        error = check_value(option, value, table)
        if error:
            problems.append(profile.diagnostic("error", dotted, error))
            continue
        settings[option.dest] = Setting(key=key, option=option, value=value)
    return settings, problems


def _ranges(profile: Profile, settings: dict[str, Setting]) -> list[Diagnostic]:
    out = []

    def bad(dest: str, message: str) -> None:
        out.append(profile.diagnostic("error", f"vllm.{settings[dest].key}", message))

    gmu = settings.get("gpu_memory_utilization")
    if gmu and not (0 < float(gmu.value) <= 1):
        bad("gpu_memory_utilization", "must be in (0, 1]: a fraction of each GPU's memory")
    for dest in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "max_num_seqs",
                 "api_server_count", "block_size"):
        if dest in settings and settings[dest].value < 1:
            bad(dest, "must be at least 1")
    port = settings.get("port")
    if port and not 1 <= port.value <= 65535:
        bad("port", "must be a TCP port (1-65535)")
    for dest in ("max_model_len", "max_num_batched_tokens", "kv_cache_memory_bytes"):
        if dest in settings:
            number = parse_human_int(settings[dest].value)
            if number is not None and number <= 0 and not (dest == "max_model_len" and number == -1):
                bad(dest, "must be positive")
    spec = settings.get("speculative_config")
    if spec is not None:
        config = json.loads(spec.value) if isinstance(spec.value, str) else spec.value
        method = config.get("method") if isinstance(config, dict) else None
        if not isinstance(config, dict):
            bad("speculative_config", "must be a table such as { method = \"mtp\", num_speculative_tokens = 3 }")
        elif method is None and "model" not in config:
            bad("speculative_config", "needs a method (e.g. \"mtp\") or a draft model")
        elif method is not None and method not in SPEC_METHODS:
            bad("speculative_config", _not_one_of(str(method), tuple(sorted(SPEC_METHODS - MTP_ALIASES))))
        else:
            tokens = config.get("num_speculative_tokens")
            if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1):
                bad("speculative_config", "num_speculative_tokens must be a positive integer")
    return out


def gpus_needed(settings: dict[str, Setting]) -> int:
    return math.prod(int(settings[d].value) if d in settings else 1
                     for d in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"))


def _against_rig(profile: Profile, settings: dict[str, Setting], rig: RigInfo) -> list[Diagnostic]:
    needed = gpus_needed(settings)
    if needed <= len(rig.gpus):
        return []
    parts = " x ".join(f"{d} {settings[d].value}" for d in
                       ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size") if d in settings)
    key = next(settings[d].key for d in ("tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size")
               if d in settings)
    return [profile.diagnostic("error", f"vllm.{key}",
                               f"{parts} needs {needed} GPUs; the rig ({rig.backend}) has {len(rig.gpus)}")]


def _env(profile: Profile) -> list[Diagnostic]:
    out = []
    for key, value in profile.env.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            out.append(profile.diagnostic("error", f"env.{key}", "not a valid environment variable name"))
        elif not isinstance(value, (str, int, float)) or isinstance(value, bool):
            out.append(profile.diagnostic("error", f"env.{key}", "must be a string or a number"))
    return out


def _rigctl_table(profile: Profile) -> list[Diagnostic]:
    out = []
    timeout = profile.rigctl.get("boot_timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        out.append(profile.diagnostic("error", "rigctl.boot_timeout", "must be a positive number of seconds"))
    command = profile.rigctl.get("vllm_command")
    if command is not None and not ((isinstance(command, str) and command.strip()) or (
            isinstance(command, list) and command and all(isinstance(c, str) and c for c in command))):
        out.append(profile.diagnostic("error", "rigctl.vllm_command",
                                      'must be a command: a list of strings such as ["/opt/vllm/bin/vllm"]'))
    return out


def validate(profile: Profile, table: OptionTable, rig: RigInfo | None = None) -> list[Diagnostic]:
    """Errors first, then warnings; empty when the profile is clean."""
    from rigctl.profiles.lints import lint

    settings, problems = resolve_settings(profile, table)
    errors = list(profile.load_diagnostics) + problems + _env(profile) + _rigctl_table(profile)
    if not profile.model:
        errors.append(profile.diagnostic("error", "model", "missing: the model (Hugging Face id or path) to serve"))
    errors += _ranges(profile, settings)
    if rig is not None:
        errors += _against_rig(profile, settings, rig)
    errors.sort(key=lambda d: (d.file or "", d.line or 0))
    return errors + lint(profile, settings, rig)

