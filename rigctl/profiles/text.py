"""Plain-text renderings of profiles, shared by the CLI and the TUI (pure strings)."""

from __future__ import annotations

import json
from typing import Any

from rigctl import fmt
from rigctl.profiles.schema import FIRST_CLASS, Diagnostic, Profile
from rigctl.profiles.summary import Knobs, knobs
from rigctl.profiles.vllm_args import LaunchSpec
from rigctl.redact import REDACTED, is_secret_env, is_secret_option
from rigctl.vllm.options import OptionTable

COLUMNS = ("", "name", "layout", "quant", "ctx", "seqs", "async", "mtp", "kv")


def list_table(rows: list[dict[str, Any]]) -> str:
    body = [COLUMNS]
    notes = []
    for row in rows:
        mark = "*" if row["active"] else ""
        if row.get("error"):
            body.append((mark, row["name"], "INVALID", "", "", "", "", "", ""))
            notes.append(f"{row['name']}: {row['error']}")
            continue
        cells = Knobs(**{k: row[k] for k in Knobs.__dataclass_fields__}).cells()
        body.append((mark, row["name"], *(cells[c] for c in COLUMNS[2:])))
    return "\n".join([fmt.table(body), *notes])


def _value_text(key: str, value: Any) -> str:
    if is_secret_option(key) and not isinstance(value, bool):
        return REDACTED
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def chain_text(chain: tuple[str, ...] | list[str]) -> str:
    """The parents in order. A user profile may take a shipped one's name and extend it (the demo
    does): the two are told apart, so `base -> base` does not read as a loop."""
    shown = []
    for i, name in enumerate(chain):
        if i + 1 < len(chain) and chain[i + 1] == name:
            shown.append(f"{name} (yours)")
        elif i > 0 and chain[i - 1] == name:
            shown.append(f"{name} (shipped)")
        else:
            shown.append(name)
    return " -> ".join(shown)


def show_text(profile: Profile, table: OptionTable, spec: LaunchSpec | None, diagnostics: list[Diagnostic]) -> str:
    where = "shipped example" if profile.shipped else "user profile"
    lines = [f"{profile.name}  ({where}: {profile.path})"]
    if len(profile.chain) > 1:
        lines.append(f"extends: {chain_text(profile.chain[1:])}")
    if profile.description:
        lines.append(f"description: {profile.description}")
    origin = profile.origin("model")
    lines.append(f"model: {profile.model}" + (f"    ({origin.profile}:{origin.line})" if origin else ""))
    cells = knobs(profile, table).cells()
    lines.append("knobs: " + "  ".join(f"{k} {v}" for k, v in cells.items()))
    for section, values in (("vllm", profile.vllm), ("env", profile.env)):
        if not values:
            continue
        lines.append(f"[{section}]")
        first = sorted(values, key=lambda k: (FIRST_CLASS.index(k) if k in FIRST_CLASS else len(FIRST_CLASS), k))
        for key in first:
            value = REDACTED if section == "env" and is_secret_env(key) else _value_text(key, values[key])
            source = profile.origin(f"{section}.{key}")
            lines.append(f"  {key} = {value}".ljust(52) + (f"  {source.profile}:{source.line}" if source else ""))
    if spec is not None:
        lines += ["", spec.display()]
    if diagnostics:
        lines.append("")
        lines += [str(d) for d in diagnostics]
    return "\n".join(lines)
