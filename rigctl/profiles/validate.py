"""Checking a resolved profile against vLLM's real options and against the rig.

Every problem is reported at once, each naming its file, line and key. Warnings (lints)
never block; errors do.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rigctl.config import LAYOUT, RULES
from rigctl.gpu.model import RigInfo
from rigctl.profiles.envfile import env_file_path
from rigctl.profiles.lints import lint
from rigctl.profiles.schema import VERIFY_KEYS, Diagnostic, Profile
from rigctl.profiles.settings import ResolvedSettings, Setting, gpus_needed, not_one_of, resolve_settings
from rigctl.rules import RuleError
from rigctl.vllm.options import (
    MTP_ALIASES,
    SPEC_METHODS,
    OptionTable,
    parse_human_int,
)


def _ranges(profile: Profile, settings: dict[str, Setting]) -> list[Diagnostic]:
    out = []

    def bad(dest: str, message: str) -> None:
        out.append(profile.diagnostic("error", f"vllm.{settings[dest].key}", message))

    gmu = settings.get("gpu_memory_utilization")
    if gmu and not (0 < float(gmu.value) <= 1):
        bad("gpu_memory_utilization", "must be in (0, 1]: a fraction of each GPU's memory")
    for dest in (
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "data_parallel_size",
        "max_num_seqs",
        "api_server_count",
        "block_size",
    ):
        if dest in settings and settings[dest].value < 1:
            bad(dest, "must be at least 1")
    port = settings.get("port")
    if port and not 1 <= port.value <= 65535:
        bad("port", "must be a TCP port (1-65535)")
    for dest in ("max_model_len", "max_num_batched_tokens", "kv_cache_memory_bytes"):
        if dest in settings:
            number = parse_human_int(settings[dest].value)
            if number is not None and number <= 0 and not (dest == "max_model_len" and number == -1):
                bad(dest, "must be positive")
    spec = settings.get("speculative_config")
    if spec is not None:
        config = json.loads(spec.value) if isinstance(spec.value, str) else spec.value
        method = config.get("method") if isinstance(config, dict) else None
        if not isinstance(config, dict):
            bad("speculative_config", 'must be a table such as { method = "mtp", num_speculative_tokens = 3 }')
        elif method is None and "model" not in config:
            bad("speculative_config", 'needs a method (e.g. "mtp") or a draft model')
        elif method is not None and method not in SPEC_METHODS:
            bad("speculative_config", not_one_of(str(method), tuple(sorted(SPEC_METHODS - MTP_ALIASES))))
        else:
            tokens = config.get("num_speculative_tokens")
            if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1):
                bad("speculative_config", "num_speculative_tokens must be a positive integer")
    return out


def _against_rig(profile: Profile, settings: dict[str, Setting], rig: RigInfo) -> list[Diagnostic]:
    needed = gpus_needed(settings)
    if needed <= len(rig.gpus):
        return []
    parts = " x ".join(
        f"{d} {settings[d].value}"
        for d in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")
        if d in settings
    )
    key = next(settings[d].key for d in ("tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size") if d in settings)
    return [profile.diagnostic("error", f"vllm.{key}", f"{parts} needs {needed} GPUs; the rig ({rig.backend}) has {len(rig.gpus)}")]


def _env(profile: Profile) -> list[Diagnostic]:
    out = []
    for key, value in profile.env.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            out.append(profile.diagnostic("error", f"env.{key}", "not a valid environment variable name"))
        elif not isinstance(value, (str, int, float)) or isinstance(value, bool):
            out.append(profile.diagnostic("error", f"env.{key}", "must be a string or a number"))
    return out


def _rigctl_table(profile: Profile) -> list[Diagnostic]:
    out = []
    for key in ("boot_timeout", "vllm_command"):  # [server]'s keys in config.toml: one rule for both
        if key in profile.rigctl:
            try:
                RULES[key].parse(profile.rigctl[key])
            except RuleError as exc:
                out.append(profile.diagnostic("error", f"rigctl.{key}", str(exc)))
    extra = profile.rigctl.get("extra_args")
    if extra is not None and not (isinstance(extra, list) and all(isinstance(a, str) for a in extra)):
        out.append(
            profile.diagnostic("error", "rigctl.extra_args", 'must be a list of strings, as argv words: ["--new-flag", "value"]')
        )
    out += _env_file(profile)
    return out


def _env_file(profile: Profile) -> list[Diagnostic]:
    """`[rigctl] env_file`: a file of KEY=value lines (the profile's secrets, kept out of it)."""
    if "env_file" not in profile.rigctl:
        return []
    path = env_file_path(profile)
    if path is None:
        return [profile.diagnostic("error", "rigctl.env_file", "must be the path of a file of KEY=value lines")]
    try:
        mode = path.stat().st_mode
        path.read_bytes()
    except OSError as exc:
        return [profile.diagnostic("error", "rigctl.env_file", f"{path}: {exc.strerror or exc}")]
    if mode & 0o077:
        return [
            profile.diagnostic(
                "warning",
                "rigctl.env_file",
                f"{path} holds secrets and others can read it (mode {mode & 0o777:o}): chmod 600 {path}",
            )
        ]
    return []


def _check_value(key: str, value: Any) -> str | None:
    """A profile's [verify] key by the same rule as config.toml's (rigctl/config.py RULES)."""
    try:
        RULES[LAYOUT["verify"][key]].parse(value)
    except RuleError as exc:
        return str(exc)
    return None


def verify_table_problems(profile: Profile) -> list[Diagnostic]:
    """The profile's own [verify] table, checked as config.toml's is (validate runs this)."""
    out = []
    for key, value in profile.verify.items():
        if key not in VERIFY_KEYS:
            out.append(profile.diagnostic("error", f"verify.{key}", f"not a verify setting (allowed: {', '.join(VERIFY_KEYS)})"))
        elif (problem := _check_value(key, value)) is not None:
            out.append(profile.diagnostic("error", f"verify.{key}", problem))
    return out


def validate(profile: Profile, table: OptionTable, rig: RigInfo | None = None) -> list[Diagnostic]:
    """Errors first, then warnings; empty when the profile is clean."""
    return validated(profile, table, rig)[1]


def validated(profile: Profile, table: OptionTable, rig: RigInfo | None = None) -> tuple[ResolvedSettings, list[Diagnostic]]:
    """The profile's [vllm] keys resolved against `table`, and its diagnostics (errors first, then
    warnings): one pass, for the checked profile to carry both."""
    settings, problems = resolve_settings(profile, table)
    errors = list(profile.load_diagnostics) + problems + _env(profile) + _rigctl_table(profile) + verify_table_problems(profile)
    if not profile.model:
        errors.append(profile.diagnostic("error", "model", "missing: the model (Hugging Face id or path) to serve"))
    errors += _ranges(profile, settings)
    if rig is not None:
        errors += _against_rig(profile, settings, rig)
    errors.sort(key=lambda d: (d.file or "", d.line or 0))
    return settings, errors + lint(profile, settings, rig)
