"""The `vllm serve` option tables: which keys a profile's [vllm] table may hold, per vLLM version.

Bundled: the real parsers of vLLM 0.32.0 and 0.33.0, extracted
(rigctl/vllm/data/vllm_options_<version>.json). `rigctl profile refresh-options` writes
the table of an installed vLLM to the config dir (vllm_options/<version>.json), and for that
version it wins over a bundled one. A profile is checked and rendered against the table of
the version its command runs (profiles/vllm_version.py); with no table for that version,
the nearest older one (else the oldest) is used, and said so.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from rigctl import paths

OptionKind = Literal["bool", "flag", "value", "append"]

# Options vLLM removed: the key, when it went, and what to do instead. Versions are the
# release the option stopped parsing in (PR where known); all are absent from 0.33.0.
REMOVED: dict[str, tuple[str, str]] = {
    "swap_space": ("0.18.0", "V0's CPU swap space; V1 never swaps (PR #36216). Delete the key"),
    "enable_reasoning": ("0.10.0", "deprecated in 0.9.0; setting reasoning_parser is enough"),
    "num_scheduler_steps": ("0.10.2", "multi-step scheduling went with V0 (PR #22779). Delete the key"),
    "multi_step_stream_outputs": ("0.10.2", "multi-step scheduling went with V0 (PR #22779). Delete the key"),
    "guided_decoding_backend": ("0.10.2", 'use structured_outputs_config = { backend = "..." } (PR #22772)'),
    "max_seq_len_to_capture": ("0.11.0", "CUDA graph sizes are compilation_config.max_cudagraph_capture_size (PR #25543)"),
    "disable_async_output_proc": ("0.11.0", "V0 only (PR #25334). Delete the key"),
    "preemption_mode": ("0.11.0", "V1 always recomputes (PR #25334). Delete the key"),
    "scheduler_delay_factor": ("0.11.0", "V0 only (PR #25334). Delete the key"),
    "task": ("0.13.0", 'use runner = "generate"|"pooling" and convert = ... (PR #21470)'),
    "use_v2_block_manager": ("0.7.0", "block manager v2 became the only one (PR #8704). Delete the key"),
    "tokenizer_pool_size": ("0.10.0", "V0 tokenizer pool. Delete the key"),
    "rope_scaling": ("0.10.0", "use hf_overrides = { rope_scaling = { ... } }"),
    "rope_theta": ("0.10.0", "use hf_overrides = { rope_theta = ... }"),
    "worker_use_ray": ("0.7.0", 'use distributed_executor_backend = "ray"'),
    "device": ("0.11.0", "the device is detected; the prefix is now ambiguous (device_ids, device_memory_utilization)"),
}

# Spec-decode methods vLLM 0.33 rewrites to "mtp" with a deprecation warning.
MTP_ALIASES = frozenset(
    {
        "deepseek_mtp",
        "qwen3_next_mtp",
        "qwen3_5_mtp",
        "qwen4_exp_mtp",
        "glm4_moe_mtp",
        "mimo_mtp",
        "ernie_mtp",
        "nemotron_h_mtp",
        "longcat_flash_mtp",
        "gemma4_mtp",
    }
)
SPEC_METHODS = (
    frozenset(
        {
            "ngram",
            "ngram_gpu",
            "draft_model",
            "suffix",
            "custom_class",
            "eagle",
            "eagle3",
            "extract_hidden_states",
            "dflash",
            "dspark",
            "mtp",
        }
    )
    | MTP_ALIASES
)


@dataclass(frozen=True)
class VllmOption:
    dest: str
    flags: tuple[str, ...]
    negative: str | None
    short: tuple[str, ...]
    kind: OptionKind
    type: str  # bool | int | float | str | json | human_int | human_int_or_auto | any (as the table names it)
    nargs: str | None
    choices: tuple[str, ...] | None
    known: tuple[str, ...] | None
    open_choices: bool
    default: str | None

    @property
    def flag(self) -> str:
        return self.flags[0]


_HUMAN = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgGtT]?)$")


def parse_human_int(value: Any) -> int | None:
    """vLLM's human-readable ints: 32k = 32,000, 32K = 32,768; None for 'auto' or junk."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        return None
    match = _HUMAN.match(value.strip())
    if not match:
        return None
    number, unit = float(match.group(1)), match.group(2)
    base = 1000 if unit.islower() else 1024
    power = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}[unit.lower()]
    return int(number * base**power)


def key_of(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


class OptionTable:
    def __init__(self, data: dict[str, Any], origin: str) -> None:
        self.version: str = data["vllm_version"]
        self.origin = origin
        self.quantization_methods = tuple(data.get("quantization_methods", ()))
        self.kv_cache_dtypes = tuple(data.get("kv_cache_dtypes", ()))
        self.options: dict[str, VllmOption] = {}
        self._names: dict[str, tuple[str, bool]] = {}
        for dest, o in data["options"].items():
            option = VllmOption(
                dest=dest,
                flags=tuple(o["flags"]),
                negative=o.get("negative"),
                short=tuple(o.get("short", ())),
                kind=o["kind"],
                type=o["type"],
                nargs=o.get("nargs"),
                choices=tuple(o["choices"]) if o.get("choices") else None,
                known=tuple(o["known"]) if o.get("known") else None,
                open_choices=bool(o.get("open_choices")),
                default=o.get("default"),
            )
            self.options[dest] = option
            self._names.setdefault(dest, (dest, False))
            for flag in option.flags:
                self._names.setdefault(key_of(flag), (dest, False))
            if option.negative:
                self._names.setdefault(key_of(option.negative), (dest, True))

    def resolve(self, key: str) -> tuple[VllmOption, bool] | None:
        """The option a profile key names (snake or kebab case), and whether the key is
        the negative spelling (`no_async_scheduling = true` means async off)."""
        found = self._names.get(key.replace("-", "_"))
        if found is None:
            return None
        dest, negated = found
        return self.options[dest], negated

    def closest(self, key: str) -> str | None:
        matches = difflib.get_close_matches(key.replace("-", "_"), list(self._names), n=1, cutoff=0.75)
        return matches[0] if matches else None


def release(version: str) -> str:
    """'0.32.0+cpu' -> '0.32.0': a build's local tag does not change its options."""
    return version.split("+", 1)[0].strip()


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in release(version).replace("rc", ".").split(".")[:4])


def user_tables_dir() -> Path:
    return paths.config_dir() / "vllm_options"


def user_table_path(version: str) -> Path:
    return user_tables_dir() / f"{release(version)}.json"


def _bundled_dir() -> Path:
    return Path(str(resources.files("rigctl.vllm") / "data"))


def available_tables() -> dict[str, str]:
    """version -> where its table is: the user's refreshed ones over the bundled ones."""
    found = {p.stem.removeprefix("vllm_options_"): str(p) for p in _bundled_dir().glob("vllm_options_*.json")}
    if user_tables_dir().is_dir():
        found.update({p.stem: str(p) for p in user_tables_dir().glob("*.json")})
    return dict(sorted(found.items(), key=lambda item: _key(item[0])))


@functools.lru_cache(maxsize=8)
def _load(path: str) -> OptionTable:
    origin = "refreshed" if not path.startswith(str(_bundled_dir())) else "bundled"
    return OptionTable(json.loads(Path(path).read_text()), origin)


def load_option_table(version: str | None = None) -> OptionTable:
    """The table for `version` (see table_for), or the newest when no version is asked."""
    return table_for(version).table


@dataclass(frozen=True)
class TableChoice:
    table: OptionTable
    served: str | None  # the version the command runs, when known

    @property
    def exact(self) -> bool:
        return self.served is not None and release(self.served) == self.table.version

    @property
    def note(self) -> str | None:
        """What a user must be told: no table for the version that will run, or no version known."""
        if self.exact:
            return None
        if self.served is None:
            return (
                f"the vLLM version the command runs is not known yet; checked against vLLM "
                f"{self.table.version}'s options ({self.table.origin})"
            )
        return (
            f"no option table for vLLM {self.served}; checked against vLLM {self.table.version}'s "
            f"({self.table.origin}): `rigctl profile refresh-options` builds the right one"
        )


def versions_having(key: str) -> list[str]:
    """The vLLM versions (of the tables here) whose `vllm serve` takes `key`."""
    return [version for version, path in available_tables().items() if _load(path).resolve(key) is not None]


def table_for(version: str | None) -> TableChoice:
    tables = available_tables()
    if version is not None and release(version) in tables:
        return TableChoice(_load(tables[release(version)]), version)
    versions = list(tables)
    if version is None:
        return TableChoice(_load(tables[versions[-1]]), None)
    older = [v for v in versions if _key(v) <= _key(version)]
    return TableChoice(_load(tables[(older or versions)[-1 if older else 0]]), version)
