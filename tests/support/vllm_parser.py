"""An argparse parser rebuilt from vLLM 0.33.0's real `vllm serve` parser extraction.

Built from the reference extraction (tests/fixtures/vllm/), not from rigctl's own table,
so it checks rigctl's rendering independently: every flag must exist with the right
arity, boolean pairs must use the spellings vLLM accepts, typed values must convert, JSON
values must parse. Abbreviations are off: rigctl must write flags in full.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any, NoReturn

FIXTURES = Path(__file__).parent.parent / "fixtures" / "vllm"
_HUMAN = re.compile(r"^\d+(\.\d+)?[kKmMgGtT]?$")


def _human(value: str) -> str:
    if not _HUMAN.match(value):
        raise argparse.ArgumentTypeError(f"not a human-readable int: {value}")
    return value


def _human_or_auto(value: str) -> str:
    return value if value in ("auto", "-1") else _human(value)


def _json(value: str) -> object:
    return json.loads(value)


TYPES = {
    "int": int,
    "float": float,
    "human_readable_int": _human,
    "human_readable_int_or_auto": _human_or_auto,
    "loads": _json,
    "parse_dataclass": _json,
    "_parse_type": _json,
}


class ParseError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ParseError(message)


def build() -> argparse.ArgumentParser:
    data = json.loads((FIXTURES / "vllm_serve_options_0.33.0.json").read_text())
    help_text = (FIXTURES / "vllm_serve_help_all_0.33.0.txt").read_text()
    parser = _Parser(prog="vllm serve", allow_abbrev=False, add_help=False)
    parser.add_argument("model_tag")
    for opt in data["options"]:
        names = opt["long"] + opt["short"]
        action = opt["action"]
        if action == "EnableDisableAction":
            parser.add_argument(*names, dest=opt["dest"], action="store_const", const=True)
            continue
        if action in ("_StoreTrueAction",):
            parser.add_argument(*names, dest=opt["dest"], action="store_true")
            continue
        kwargs: dict[str, Any] = {"dest": opt["dest"]}  # argparse's keywords: each of its own type
        if opt["nargs"] in ("+", "?"):
            kwargs["nargs"] = opt["nargs"]
        if opt["choices"]:
            kwargs["choices"] = opt["choices"]
        type_fn = TYPES.get(opt["type"] or "")
        header = next(
            (
                m.group(0)
                for flag in opt["long"]
                for m in [re.search(rf"^  {re.escape(flag)}\b.*(?:\n {{20,}}.*)*", help_text, re.M)]
                if m
            ),
            "",
        )
        if "Should either be a valid JSON string" in header:
            type_fn = _json
        if type_fn:
            kwargs["type"] = type_fn
        if action == "_AppendAction":
            kwargs["action"] = "append"
        parser.add_argument(*names, **kwargs)
    for alias in data["hidden_accepted_aliases"]:
        parser.add_argument(alias, dest=alias.lstrip("-").replace("-", "_"), action="store_true")
    return parser


def parse(argv: list[str]) -> argparse.Namespace:
    """Parse what follows `vllm serve` (the model first)."""
    return build().parse_args(argv)
