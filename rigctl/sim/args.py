"""The simulator's `vllm serve` parser, built from the same option table rigctl validates with,
so an unknown flag fails here exactly as it fails in vLLM: exit 2, `unrecognized arguments:`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rigctl.vllm.options import OptionTable, load_option_table, parse_human_int


def _human(value: str) -> int:
    number = parse_human_int(value if not value.lstrip("-").isdigit() else int(value))
    if number is None:
        raise argparse.ArgumentTypeError(f"invalid human-readable integer: {value!r}")
    return number


def _human_or_auto(value: str) -> int:
    return -1 if value in ("auto", "-1") else _human(value)


TYPES: dict[str, Any] = {"int": int, "float": float, "human_int": _human, "human_int_or_auto": _human_or_auto, "json": json.loads}


def build_parser(table: OptionTable | None = None, reject: frozenset[str] = frozenset()) -> argparse.ArgumentParser:
    """`reject` drops flags, as an older vLLM that never had them would (RIGCTL_SIM_REJECT_FLAGS)."""
    table = table or load_option_table()
    parser = argparse.ArgumentParser(prog="vllm", add_help=True)  # vLLM says "vllm: error: ..."
    parser.add_argument("model_tag")
    for option in table.options.values():
        if reject & {*option.flags, option.negative}:
            parser.set_defaults(**{option.dest: None})  # gone from the parser, still read as unset
            continue
        names = [*option.flags, *option.short]
        if option.kind == "bool":
            parser.add_argument(*names, dest=option.dest, action="store_const", const=True, default=None)
            if option.negative:
                parser.add_argument(option.negative, dest=option.dest, action="store_const", const=False)
            hidden = f"--no-{option.flag[2:]}"  # vLLM still accepts the old --no-enable-X spellings
            if hidden != option.negative:
                parser.add_argument(hidden, dest=option.dest, action="store_const", const=False, help=argparse.SUPPRESS)
            continue
        if option.kind == "flag":
            parser.add_argument(*names, dest=option.dest, action="store_true")
            continue
        kwargs: dict[str, Any] = {"dest": option.dest}
        if option.nargs:
            kwargs["nargs"] = option.nargs
        if option.choices:
            kwargs["choices"] = list(option.choices)
        if option.type in TYPES:
            kwargs["type"] = TYPES[option.type]
        if option.kind == "append":
            kwargs["action"] = "append"
        parser.add_argument(*names, **kwargs)
    return parser
