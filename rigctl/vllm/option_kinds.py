"""How one argparse action of `vllm serve` becomes an entry of rigctl's option table.

Shared by tools/build_vllm_options.py (from the reference extraction) and by
`rigctl profile refresh-options` (from an installed vLLM), so both write one format:

    {"flags": [...], "negative": flag|None, "short": [...], "kind": bool|flag|value|append,
     "type": int|float|str|json|human_int|human_int_or_auto|any, "nargs": None|"+"|"?",
     "choices": [...]|None (argparse enforces), "known": [...]|None (listed in help),
     "open_choices": bool (help allows plugin-registered names), "default": str}
"""

from __future__ import annotations

import re
from typing import Any

_TYPES = {
    "int": "int",
    "float": "float",
    "str": "str",
    "human_readable_int": "human_int",
    "human_readable_int_or_auto": "human_int_or_auto",
    "loads": "json",
    "parse_dataclass": "json",
    "_parse_type": "json",
    "union_dict_and_str": "json",
}

# `_optional_type` hides the inner type; these are the ones a profile is likely to set.
_OPTIONAL_INNER = {
    "kv_cache_memory_bytes": "human_int",
    "max_log_len": "int",
    "num_gpu_blocks_override": "int",
    "max_parallel_loading_workers": "int",
    "distributed_timeout_seconds": "int",
    "cpu_distributed_timeout_seconds": "int",
    "grpc_port": "int",
    "mamba_block_size": "int",
    "kv_offloading_size": "float",
    "quantization": "str",
    "host": "str",
    "tool_call_parser": "str",
    "attention_backend": "str",
    "chat_template": "str",
    "download_dir": "str",
    "revision": "str",
}

_JSON_HINT = "Should either be a valid JSON string or JSON keys"


def _listed_values(help_text: str) -> tuple[list[str] | None, bool]:
    """Values listed in the flag's help header: `{a,b}` or `['a', 'b']`; and whether
    the help admits names beyond the list (plugins)."""
    header = help_text.split("\n", 1)[0]
    open_choices = "or name registered" in header
    braces = re.search(r"\{([^}]*)\}", header)
    if braces:
        return [v for v in braces.group(1).split(",") if v and v != "None"], open_choices
    bracket = re.search(r"\[('[^\]]*)\]", header)
    if bracket:
        return re.findall(r"'([^']*)'", bracket.group(1)), open_choices
    return None, open_choices


def classify_action(
    *,
    dest: str,
    long: list[str],
    short: list[str],
    action: str,
    type_name: str | None,
    nargs: Any,
    choices: list[Any] | None,
    default: Any,
    help_text: str,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "flags": [long[0]] if long else [],
        "negative": None,
        "short": short,
        "nargs": nargs if nargs in ("+", "?") else None,
        "choices": None,
        "known": None,
        "open_choices": False,
        "default": _short_default(default),
    }
    # 0.33 subclasses it as EnableDisableAction (--enable-x / --disable-x); 0.32 uses argparse's own
    # BooleanOptionalAction (--enable-x / --no-enable-x). Both: a bool with its negative spelling.
    if action in ("EnableDisableAction", "BooleanOptionalAction"):
        entry.update(kind="bool", type="bool", negative=long[1] if len(long) > 1 else None)
        return entry
    if action in ("_StoreTrueAction", "_StoreFalseAction"):
        entry.update(kind="flag", type="bool")
        return entry
    entry["flags"] = list(long)  # value options can have aliases (--device-memory-utilization)
    entry["kind"] = "append" if action == "_AppendAction" else "value"
    if type_name == "_optional_type" or type_name is None:
        kind = "json" if _JSON_HINT in help_text else _OPTIONAL_INNER.get(dest, "any")
    else:
        kind = _TYPES.get(type_name, "str" if type_name in ("parse_reasoning_parser", "<lambda>") else "any")
    if _JSON_HINT in help_text:
        kind = "json"
    entry["type"] = kind
    if choices:
        entry["choices"] = [str(c) for c in choices if c is not None]
    listed, open_choices = _listed_values(help_text)
    if listed and not entry["choices"]:
        entry["known"] = listed
    entry["open_choices"] = open_choices
    return entry


def _short_default(default: Any) -> str | None:
    """The default as vLLM's help shows it; long dataclass reprs are not worth keeping."""
    if default is None:
        return None
    text = str(default)
    return text if len(text) <= 60 else None
