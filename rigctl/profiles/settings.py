"""A profile's [vllm] keys resolved to `vllm serve` options: each key's option, its value
checked against the option's type and choices, and every unknown, removed or duplicated key
reported. What validation and the lints both start from."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from rigctl.profiles.schema import Diagnostic, Profile
from rigctl.vllm.options import (
    REMOVED,
    OptionTable,
    VllmOption,
    parse_human_int,
    versions_having,
)


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
        return not_one_of(text, option.choices)
    known = option.known or _extra_known(option, table)
    if known and text not in known and not option.open_choices:
        return not_one_of(text, known, f" (vLLM {table.version})")
    return None


def _extra_known(option: VllmOption, table: OptionTable) -> tuple[str, ...] | None:
    if option.dest == "quantization":
        return table.quantization_methods or None
    if option.dest == "kv_cache_dtype":
        return table.kv_cache_dtypes or None
    return None


def not_one_of(text: str, values: tuple[str, ...], where: str = "") -> str:
    import difflib

    close = difflib.get_close_matches(text, values, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    if text == "auto_round":
        hint = "; AutoRound checkpoints load as `inc` (the `auto_round` name is gone)"
    shown = ", ".join(values) if len(values) <= 12 else ", ".join(values[:12]) + ", ..."
    return f"{text!r} is not one of {shown}{where}{hint}"


ResolvedSettings = dict[str, Setting]  # a profile's [vllm] keys resolved to vLLM's options, by dest


def resolve_settings(profile: Profile, table: OptionTable) -> tuple[ResolvedSettings, list[Diagnostic]]:
    """[vllm] keys -> their options, with every unknown, removed or duplicated key reported."""
    settings: dict[str, Setting] = {}
    problems: list[Diagnostic] = []
    for key, value in profile.vllm.items():
        dotted = f"vllm.{key}"
        norm = key.replace("-", "_")
        if norm in ("model", "model_tag"):
            problems.append(
                profile.diagnostic(
                    "error", dotted, "set the top-level `model` key instead (vllm serve takes the model as its positional argument)"
                )
            )
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


def gpus_needed(settings: dict[str, Setting]) -> int:
    return math.prod(
        int(settings[d].value) if d in settings else 1
        for d in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")
    )
