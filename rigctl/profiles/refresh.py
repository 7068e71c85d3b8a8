"""Refresh the option table from an installed vLLM: its own `vllm serve` parser, read in
that vLLM's Python, written to the config dir so validation follows the installed version.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from rigctl.atomic import write_text_atomic
from rigctl.errors import RigctlError
from rigctl.vllm import options as options_module
from rigctl.vllm.option_kinds import classify_action

# Runs inside the vLLM interpreter; prints the parser's actions as JSON. Kept to APIs that
# have been stable across releases (FlexibleArgumentParser, ServeSubcommand).
_PROBE = r"""
import json, sys
import vllm
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.entrypoints.cli.serve import ServeSubcommand
root = FlexibleArgumentParser(prog="vllm")
sub = root.add_subparsers(dest="subparser")
serve = ServeSubcommand().subparser_init(sub)
actions = []
for a in serve._actions:
    longs = [s for s in a.option_strings if s.startswith("--")]
    if not longs or a.dest == "help":
        continue
    actions.append({
        "dest": a.dest, "long": longs, "short": [s for s in a.option_strings if not s.startswith("--")],
        "action": type(a).__name__, "type": getattr(a.type, "__name__", None) if a.type else None,
        "nargs": a.nargs if a.nargs in ("+", "?", "*") else (0 if a.nargs == 0 else None),
        "choices": [str(c) for c in a.choices if c is not None] if a.choices else None,
        "default": repr(a.default),
        "metavar": a.metavar if isinstance(a.metavar, str) else
                   (repr([str(m) for m in a.metavar]) if isinstance(a.metavar, (list, tuple)) else None),
        "help": a.help if isinstance(a.help, str) else "",
    })
hidden = sorted(k for k in serve._option_string_actions if k.startswith("--")
                and not any(k in a["long"] for a in actions))
quant = kv = None
try:
    from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS as quant
    quant = list(quant)
except Exception:
    pass
try:
    import typing
    from vllm.config.cache import CacheDType
    kv = list(typing.get_args(CacheDType))
except Exception:
    pass
json.dump({"version": vllm.__version__, "actions": actions, "hidden": hidden,
           "quantization": quant, "kv_cache_dtypes": kv}, sys.stdout)
"""


def probe(python: str, env: dict[str, str] | None = None, timeout: float = 300.0) -> dict[str, Any]:
    try:
        done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError as exc:
        raise RigctlError(f"no Python at {python!r}: point --python at the interpreter vLLM is installed in") from exc
    except subprocess.TimeoutExpired as exc:
        raise RigctlError(f"{python} took over {timeout:.0f} s to build vLLM's parser") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RigctlError(f"could not read vLLM's parser with {python}: {last}")
    table = json.loads(done.stdout)
    if not isinstance(table, dict):
        raise RigctlError(f"{python} did not print vLLM's parser as a JSON object")
    return table


def build_table(raw: dict[str, Any]) -> dict[str, Any]:
    bundled = options_module.load_option_table(raw["version"])  # for lists an old vLLM cannot tell
    options = {}
    for a in raw["actions"]:
        header = f"  {', '.join(a['long'])} {a.get('metavar') or ''}"
        options[a["dest"]] = classify_action(
            dest=a["dest"],
            long=a["long"],
            short=a["short"],
            action=a["action"],
            type_name=a["type"],
            nargs=a["nargs"],
            choices=a["choices"],
            default=a["default"],
            help_text=f"{header}\n{a['help']}",
        )
    return {
        "vllm_version": options_module.release(raw["version"]),
        "source": "refreshed from an installed vLLM by `rigctl profile refresh-options`",
        "hidden_aliases": raw.get("hidden", []),
        "options": options,
        "quantization_methods": raw.get("quantization") or list(bundled.quantization_methods),
        "kv_cache_dtypes": raw.get("kv_cache_dtypes") or list(bundled.kv_cache_dtypes),
    }


def refresh(python: str, env: dict[str, str] | None = None) -> tuple[Path, dict[str, Any]]:
    table = build_table(probe(python, env))
    target = options_module.user_table_path(table["vllm_version"])
    write_text_atomic(target, json.dumps(table, indent=1, sort_keys=True) + "\n")
    options_module._load.cache_clear()
    return target, table
