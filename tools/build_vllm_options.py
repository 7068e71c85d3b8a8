"""Build rigctl's compact `vllm serve` option table from the reference extraction of a vLLM release.

Inputs (from a real vLLM parser; see shared/reference/vllm/FACTS.md section 3.1):
  vllm_serve_options_<v>.json, vllm_serve_help_all_<v>.txt,
  quantization_methods_<v>.txt, kv_cache_dtypes_<v>.txt
Output: rigctl/vllm/data/vllm_options_<v>.json (the table rigctl bundles for that version), or
OUT_DIR/vllm_options_<v>.json

    python tools/build_vllm_options.py ../shared/reference/vllm 0.33.0 [OUT_DIR]

`rigctl profile refresh-options` builds the same table from an installed vLLM instead.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rigctl.vllm.option_kinds import classify_action


def help_sections(help_text: str) -> dict[str, str]:
    """Long flag -> its help block (the header line and the indented text after it)."""
    sections: dict[str, str] = {}
    current: list[str] = []
    flags: list[str] = []
    for line in help_text.splitlines():
        if re.match(r"^  -{1,2}[a-zA-Z]", line):
            if flags:
                for flag in flags:
                    sections[flag] = "\n".join(current)
            flags = re.findall(r"(--[a-z0-9][a-z0-9-]*)", line.split("  ", 2)[1] if "  " in line[2:] else line)
            current = [line]
        elif flags:
            current.append(line)
    for flag in flags:
        sections[flag] = "\n".join(current)
    return sections


def main() -> None:
    ref, version = Path(sys.argv[1]), sys.argv[2]
    raw = json.loads((ref / f"vllm_serve_options_{version}.json").read_text())
    helps = help_sections((ref / f"vllm_serve_help_all_{version}.txt").read_text())
    options = {}
    for opt in raw["options"]:
        head = next((helps[f] for f in opt["long"] if f in helps), "")
        options[opt["dest"]] = classify_action(
            dest=opt["dest"],
            long=opt["long"],
            short=opt["short"],
            action=opt["action"],
            type_name=opt["type"],
            nargs=opt["nargs"],
            choices=opt["choices"],
            default=opt["default"],
            help_text=head,
        )
    table = {
        "vllm_version": version,
        "source": f"vLLM {version} `vllm serve` parser (reference extraction), built by tools/build_vllm_options.py",
        "hidden_aliases": raw["hidden_accepted_aliases"],
        "options": options,
        "quantization_methods": (ref / f"quantization_methods_{version}.txt").read_text().split(),
        "kv_cache_dtypes": (ref / f"kv_cache_dtypes_{version}.txt").read_text().split(),
    }
    where = Path(sys.argv[3]) if len(sys.argv) > 3 else Path(__file__).resolve().parent.parent / "rigctl" / "vllm" / "data"
    out = where / f"vllm_options_{version}.json"
    out.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out} ({len(options)} options)")


if __name__ == "__main__":
    main()
