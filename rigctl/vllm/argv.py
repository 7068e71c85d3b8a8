"""A `vllm serve` command line read as vLLM's parser reads it, by the option table: long flags,
their short forms (`-tp 2`, `-dp 2`, `-sc {...}`), `--flag=value`, `--no-X` and the other negative
spellings, flags that take no value (`--enforce-eager MODEL` leaves MODEL the model), optional
(`nargs='?'`) and several (`nargs='+'`) values, and `-O3` (vLLM's shorthand for the optimization
level). A flag the table does not know is kept, with the next word as its value unless that is a
flag too: a newer vLLM's option is not dropped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rigctl.vllm.options import OptionTable, VllmOption, key_of

NO_VALUE_KINDS = ("bool", "flag")


@dataclass(frozen=True)
class ServeArgv:
    model: str | None
    flags: dict[str, str] = field(default_factory=dict)  # canonical long flag (or negative) -> value ("" for none)
    unknown: tuple[str, ...] = ()  # flags the table does not know, as written


def read_serve_argv(argv: Sequence[str], table: OptionTable) -> ServeArgv:
    words = list(argv)
    if "serve" in words:
        words = words[words.index("serve") + 1 :]
    shorts = {s: o for o in table.options.values() for s in o.short}
    model: str | None = None
    flags: dict[str, str] = {}
    unknown: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-") or word == "-":
            if model is None:
                model = word
            continue
        if word.startswith("-O") and not word.startswith("--") and word[2:3].isdigit():
            flags["--optimization-level"] = word[2:]
            continue
        name, eq, inline = word.partition("=")
        option: VllmOption | None
        negated = False
        if name.startswith("--"):
            found = table.resolve(key_of(name))
            if found is None and name.startswith("--no-"):
                # argparse's BooleanOptionalAction takes --no-X for every boolean X, listed or not
                # (vLLM 0.33 still takes --no-enable-prefix-caching beside --disable-prefix-caching)
                positive = table.resolve(key_of("--" + name[5:]))
                if positive is not None and positive[0].kind == "bool" and not positive[1]:
                    found = (positive[0], True)
            option, negated = found if found else (None, False)
        else:
            option = shorts.get(name)
        if option is None:
            unknown.append(name)
            if eq:
                flags[name] = inline
            elif not name.startswith("--no-") and i < len(words) and not words[i].startswith("-"):
                flags[name], i = words[i], i + 1
            else:
                flags[name] = ""
            continue
        key = (option.negative or name) if negated else option.flag
        if eq:
            flags[key] = inline
        elif option.kind in NO_VALUE_KINDS or negated:
            flags[key] = ""
        elif option.nargs == "+":
            taken = []
            while i < len(words) and not words[i].startswith("-"):
                taken.append(words[i])
                i += 1
            flags[key] = " ".join(taken)
        elif option.nargs == "?" and (i >= len(words) or words[i].startswith("-")):
            flags[key] = ""
        elif i < len(words):
            flags[key], i = words[i], i + 1
        else:
            flags[key] = ""
    model = flags.get("--model", model)
    return ServeArgv(model, flags, tuple(unknown))
