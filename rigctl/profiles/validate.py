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
from rigctl.rule_compounds import ListOf
from rigctl.rules import PORT, Count, Fraction, Rule, RuleError, Text, complaint
from rigctl.vllm.options import (
    MTP_ALIASES,
    SPEC_METHODS,
    OptionTable,
    parse_human_int,
)

# The [vllm] keys rigctl itself relies on, each by its rule (rigctl/rules.py); vLLM's option table
# has checked their type already (a string where a number belongs is said there).
VLLM_RULES: dict[str, Rule] = {
    "gpu_memory_utilization": Fraction("each GPU's memory", "0.92", positive=True),
    "tensor_parallel_size": Count("GPUs", 1),
    "pipeline_parallel_size": Count("GPUs", 1),
    "data_parallel_size": Count("replicas", 1),
    "max_num_seqs": Count("sequences", 1),
    "api_server_count": Count("processes", 1),
    "block_size": Count("tokens", 1),
    "port": PORT,
}
HUMAN_COUNTS: dict[str, Rule] = {
    "max_model_len": Count("tokens", 1),  # or -1: vLLM's "as long as fits"
    "max_num_batched_tokens": Count("tokens", 1),
    "kv_cache_memory_bytes": Count("bytes", 1),
}
DRAFT_TOKENS = Count("draft tokens", 1)
EXTRA_ARGS = ListOf(Text(), 'a list of strings, as argv words: ["--new-flag", "value"]')


def _ranges(profile: Profile, settings: dict[str, Setting]) -> list[Diagnostic]:
    out = []

    def bad(dest: str, message: str) -> None:
        out.append(profile.diagnostic("error", f"vllm.{settings[dest].key}", message))

    for dest, rule in VLLM_RULES.items():
        if dest in settings:
            try:
                rule.parse(settings[dest].value)
            except RuleError as exc:
                bad(dest, complaint(exc, settings[dest].value))
    for dest, rule in HUMAN_COUNTS.items():  # vLLM takes "32k", "1G": the number they say, by its rule
        if dest in settings:
            number = parse_human_int(settings[dest].value)
            if number is not None and not rule.accepts(number) and not (dest == "max_model_len" and number == -1):
                bad(dest, complaint(RuleError(rule.needs()), settings[dest].value))
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
            if tokens is not None and not DRAFT_TOKENS.accepts(tokens):
                bad("speculative_config", f"num_speculative_tokens: {complaint(RuleError(DRAFT_TOKENS.needs()), tokens)}")
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
                out.append(profile.diagnostic("error", f"rigctl.{key}", complaint(exc, profile.rigctl[key])))
    extra = profile.rigctl.get("extra_args")
    if extra is not None and not EXTRA_ARGS.accepts(extra):
        out.append(profile.diagnostic("error", "rigctl.extra_args", complaint(RuleError(EXTRA_ARGS.needs()), extra)))
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
        return complaint(exc, value)
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
