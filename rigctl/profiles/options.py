"""The `vllm serve` option table: which keys a profile's [vllm] table may hold.

Bundled: vLLM 0.33.0's real parser, extracted (rigctl/profiles/data/vllm_options.json).
`rigctl profile refresh-options` writes the table of an installed vLLM to the config dir,
and that one wins from then on.
"""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rigctl import paths

# Options vLLM removed: the key, when it went, and what to do instead. Versions are the
# release the option stopped parsing in (PR where known); all are absent from 0.33.0.
REMOVED: dict[str, tuple[str, str]] = {
    "swap_space": ("0.18.0", "V0's CPU swap space; V1 never swaps (PR #36216). Delete the key"),
    "enable_reasoning": ("0.10.0", "deprecated in 0.9.0; setting reasoning_parser is enough"),
    "num_scheduler_steps": ("0.10.2", "multi-step scheduling went with V0 (PR #22779). Delete the key"),
    "multi_step_stream_outputs": ("0.10.2", "multi-step scheduling went with V0 (PR #22779). Delete the key"),
    "guided_decoding_backend": ("0.10.2", "use structured_outputs_config = { backend = \"...\" } (PR #22772)"),
    "max_seq_len_to_capture": ("0.11.0", "CUDA graph sizes are compilation_config.max_cudagraph_capture_size (PR #25543)"),
    "disable_async_output_proc": ("0.11.0", "V0 only (PR #25334). Delete the key"),
    "preemption_mode": ("0.11.0", "V1 always recomputes (PR #25334). Delete the key"),
    "scheduler_delay_factor": ("0.11.0", "V0 only (PR #25334). Delete the key"),
    "task": ("0.13.0", "use runner = \"generate\"|\"pooling\" and convert = ... (PR #21470)"),
    "use_v2_block_manager": ("0.7.0", "block manager v2 became the only one (PR #8704). Delete the key"),
    "tokenizer_pool_size": ("0.10.0", "V0 tokenizer pool. Delete the key"),
    "rope_scaling": ("0.10.0", "use hf_overrides = { rope_scaling = { ... } }"),
    "rope_theta": ("0.10.0", "use hf_overrides = { rope_theta = ... }"),
    "worker_use_ray": ("0.7.0", "use distributed_executor_backend = \"ray\""),
    "device": ("0.11.0", "the device is detected; the prefix is now ambiguous (device_ids, device_memory_utilization)"),
}

# Spec-decode methods vLLM 0.33 rewrites to "mtp" with a deprecation warning.
MTP_ALIASES = frozenset({
    "deepseek_mtp", "qwen3_next_mtp", "qwen3_5_mtp", "qwen4_exp_mtp", "glm4_moe_mtp", "mimo_mtp", "ernie_mtp",
    "nemotron_h_mtp", "longcat_flash_mtp", "gemma4_mtp",
})
SPEC_METHODS = frozenset({"ngram", "ngram_gpu", "draft_model", "suffix", "custom_class", "eagle", "eagle3",
                          "extract_hidden_states", "dflash", "dspark", "mtp"}) | MTP_ALIASES


@dataclass(frozen=True)
class VllmOption:
    dest: str
    flags: tuple[str, ...]
    negative: str | None
    short: tuple[str, ...]
    kind: str  # bool | flag | value | append
    type: str  # bool | int | float | str | json | human_int | human_int_or_auto | any
    nargs: str | None
    choices: tuple[str, ...] | None
    known: tuple[str, ...] | None
    open_choices: bool
    default: str | None

    @property
    def flag(self) -> str:
        return self.flags[0]


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
                dest=dest, flags=tuple(o["flags"]), negative=o.get("negative"), short=tuple(o.get("short", ())),
                kind=o["kind"], type=o["type"], nargs=o.get("nargs"),
                choices=tuple(o["choices"]) if o.get("choices") else None,
                known=tuple(o["known"]) if o.get("known") else None,
                open_choices=bool(o.get("open_choices")), default=o.get("default"),
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


def user_table_path() -> Path:
    return paths.config_dir() / "vllm_options.json"


@functools.lru_cache(maxsize=4)
def _load(path: str | None) -> OptionTable:
    if path is not None:
        return OptionTable(json.loads(Path(path).read_text()), path)
    bundled = resources.files("rigctl.profiles") / "data" / "vllm_options.json"
    return OptionTable(json.loads(bundled.read_text()), "bundled")


def load_option_table() -> OptionTable:
    """The refreshed table of the installed vLLM when there is one, else the bundled one."""
    user = user_table_path()
    return _load(str(user) if user.is_file() else None)
