"""The first-class knobs of a profile as one row, and the differences between two launches."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rigctl.profiles.schema import Profile
from rigctl.profiles.settings import resolve_settings
from rigctl.profiles.vllm_args import LaunchSpec
from rigctl.vllm.options import OptionTable, parse_human_int


@dataclass(frozen=True)
class Knobs:
    tp: int
    dp: int
    pp: int
    quantization: str | None
    max_model_len: int | str | None
    max_num_seqs: int | None
    async_scheduling: bool | None  # None: vLLM decides (auto-on when compatible)
    mtp: str | None  # "mtp x3", "eagle x2", ... or None
    kv_cache_dtype: str | None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def cells(self) -> dict[str, str]:
        """The knobs as short display strings, the same in the CLI and the TUI."""
        layout = f"TP{self.tp}" + (f" DP{self.dp}" if self.dp > 1 else "") + (f" PP{self.pp}" if self.pp > 1 else "")
        max_len = self.max_model_len
        return {
            "layout": layout,
            "quant": self.quantization or "auto",
            "ctx": f"{max_len:,}" if isinstance(max_len, int) else str(max_len or "model"),
            "seqs": str(self.max_num_seqs) if self.max_num_seqs is not None else "auto",
            "async": {True: "on", False: "off", None: "auto"}[self.async_scheduling],
            "mtp": self.mtp or "-",
            "kv": self.kv_cache_dtype or "auto",
        }


def knobs(profile: Profile, table: OptionTable) -> Knobs:
    settings, _ = resolve_settings(profile, table)

    def get(dest: str, default: Any = None) -> Any:
        return settings[dest].value if dest in settings else default

    spec = get("speculative_config")
    config = json.loads(spec) if isinstance(spec, str) else spec
    mtp = None
    if isinstance(config, dict):
        method = config.get("method") or "draft"
        tokens = config.get("num_speculative_tokens")
        mtp = f"{method} x{tokens}" if tokens else str(method)
    max_len = get("max_model_len")
    parsed = parse_human_int(max_len)
    return Knobs(
        tp=int(get("tensor_parallel_size", 1)),
        dp=int(get("data_parallel_size", 1)),
        pp=int(get("pipeline_parallel_size", 1)),
        quantization=get("quantization"),
        max_model_len=parsed if parsed is not None else max_len,
        max_num_seqs=get("max_num_seqs"),
        async_scheduling=get("async_scheduling"),
        mtp=mtp,
        kv_cache_dtype=get("kv_cache_dtype"),
    )


@dataclass(frozen=True)
class Change:
    what: str  # "--max-num-seqs", "env PYTORCH_CUDA_ALLOC_CONF", "model"
    before: str | None
    after: str | None

    def __str__(self) -> str:
        """`--async-scheduling: (unset) -> (set)`: a bare switch's value is "", not absent."""

        def side(value: str | None) -> str:
            return "(unset)" if value is None else (value or "(set)")

        return f"{self.what}: {side(self.before)} -> {side(self.after)}"


def _by_flag(argv: tuple[str, ...] | list[str]) -> dict[str, str]:
    """argv after `serve MODEL` grouped per flag: {"--max-num-seqs": "8", "--enforce-eager": ""}."""
    out: dict[str, list[str]] = {}
    current = None
    for token in argv:
        if token.startswith("--"):
            flag, _, inline = token.partition("=")
            current = flag
            out.setdefault(flag, [])
            if inline:
                out[flag].append(inline)
        elif current is not None:
            out[current].append(token)
    return {flag: " ".join(values) for flag, values in out.items()}


def launch_diff(a: LaunchSpec, b: LaunchSpec) -> list[Change]:
    """What changes on the command line and in the environment going from a to b."""
    changes = []
    model_a, model_b = a.argv[a.argv.index("serve") + 1], b.argv[b.argv.index("serve") + 1]
    if model_a != model_b:
        changes.append(Change("model", model_a, model_b))
    flags_a = _by_flag(a.redacted_argv()[a.argv.index("serve") + 2 :])
    flags_b = _by_flag(b.redacted_argv()[b.argv.index("serve") + 2 :])
    for flag in sorted(set(flags_a) | set(flags_b)):
        if flags_a.get(flag) != flags_b.get(flag):
            changes.append(Change(flag, flags_a.get(flag), flags_b.get(flag)))
    env_a, env_b = a.redacted_env(), b.redacted_env()
    for key in sorted(set(env_a) | set(env_b)):
        if env_a.get(key) != env_b.get(key):
            changes.append(Change(f"env {key}", env_a.get(key), env_b.get(key)))
    return changes


def _model(spec: LaunchSpec) -> str:
    return spec.argv[spec.argv.index("serve") + 1].rsplit("/", 1)[-1].lower()


def _shared_prefix(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def nearest(candidates: dict[str, LaunchSpec], spec: LaunchSpec) -> tuple[str, list[Change]] | None:
    """The launch among `candidates` that serves the most alike model (the longest shared start of
    its name: Qwen3.6-27B-FP8 before Qwen2.5-3B for a Qwen3.6-27B-AWQ), then with the fewest
    changes to `spec` (ties: the first name). Flags alone would name a 3B profile for a 27B."""
    model = _model(spec)
    ranked = sorted(
        (-_shared_prefix(_model(c), model), len(changes), name, changes)
        for name, c in candidates.items()
        for changes in (launch_diff(c, spec),)
    )
    return (ranked[0][2], ranked[0][3]) if ranked else None
