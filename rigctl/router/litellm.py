"""The config of LiteLLM's proxy for the owner's rigs: one deployment per rig and served model
under the model's name, routed by the context each rig was started with. Seed 000's gateway rules,
as far as LiteLLM's settings reach:

- each rig's `max_input_tokens` is its live `max_model_len`, and `router_settings.
  enable_pre_call_checks` keeps a request away from rigs its prompt would not fit;
- "the estimate only steers, it never refuses": LiteLLM counts a prompt with its own tokenizer
  and, where no deployment's limit holds it, refuses with a 400 of its own (`ContextWindowExceeded
  Error` in `Router._pre_call_checks`), asking no rig. `largest_decides` comes closest to the seed:
  the largest rig of each model is given a limit no prompt reaches, so a prompt too long for the
  smaller ones goes there and its vLLM decides with its own exact count (a fast 400, nothing
  generated). A limit left out would not do it: LiteLLM (1.108) then reads the rig's
  max_model_len from its /v1/models itself, every 300 s;
- "a slow generation is not a broken worker": no retry (router, client and litellm settings all 0),
  timeouts never cool a rig down (`allowed_fails_policy`), and with the hook beside the config a
  timed-out answer is a 504 naming the fix (`stream: true`).

The master key and each rig's key stay in the environment (`os.environ/NAME`, LiteLLM's own
indirection): never in the file."""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from rigctl.router.reading import RigReading

HOOKS_MODULE = "rigctl_litellm_hooks"  # the file beside the config: rigctl_litellm_hooks.py
CONFIG_FILE = "litellm.yaml"
NEVER = 1_000_000  # "allowed fails" that never come in a minute: timeouts do not cool a rig down
NO_PROMPT_REACHES = 1_000_000_000  # the largest rig's limit with largest_decides: LiteLLM never filters it out


@dataclass(frozen=True)
class RouterOptions:
    timeout_s: float = 900.0  # an answer not streamed, whole (rigctl's boot_timeout: a switch's hold fits)
    master_key_env: str = "LITELLM_MASTER_KEY"
    largest_decides: bool = False  # seed 000's way: the largest rig is never filtered out, its vLLM refuses
    hooks: bool = False  # the hook file is beside the config


def deployment_id(rig: str, model: str) -> str:
    return f"{rig}/{model}"


def decided_by_the_rig(readings: list[RigReading], options: RouterOptions) -> set[str]:
    """The deployments LiteLLM's estimate never filters out (with largest_decides): per model, the
    rig(s) with the largest context, whose own vLLM refuses what does not fit."""
    if not options.largest_decides:
        return set()
    largest: dict[str, int] = {}
    for reading in readings:
        for model in reading.models:
            largest[model.name] = max(largest.get(model.name, 0), model.max_model_len or 0)
    return {deployment_id(r.rig, m.name) for r in readings for m in r.models if (m.max_model_len or 0) == largest[m.name]}


def litellm_config(readings: list[RigReading], options: RouterOptions) -> dict[str, Any]:
    served = [r for r in readings if not r.problem]
    open_ended = decided_by_the_rig(served, options)
    deployments = []
    for reading in served:
        for model in reading.models:
            params: dict[str, Any] = {
                "model": f"hosted_vllm/{model.name}",
                "api_base": f"{reading.url}/v1",
                "timeout": options.timeout_s,
                "max_retries": 0,
            }
            if reading.api_key_env:
                params["api_key"] = f"os.environ/{reading.api_key_env}"
            ident = deployment_id(reading.rig, model.name)
            info: dict[str, Any] = {"id": ident, "rigctl_max_model_len": model.max_model_len}
            if ident in open_ended:
                info["max_input_tokens"] = NO_PROMPT_REACHES
            elif model.max_model_len:
                info["max_input_tokens"] = model.max_model_len
            deployments.append({"model_name": model.name, "litellm_params": params, "model_info": info})
    litellm_settings: dict[str, Any] = {"num_retries": 0, "request_timeout": options.timeout_s}
    if options.hooks:
        litellm_settings["callbacks"] = f"{HOOKS_MODULE}.handler"
    return {
        "model_list": deployments,
        "router_settings": {
            "enable_pre_call_checks": True,
            "num_retries": 0,
            "allowed_fails_policy": {"TimeoutErrorAllowedFails": NEVER},
        },
        "litellm_settings": litellm_settings,
        "general_settings": {"master_key": f"os.environ/{options.master_key_env}"},
    }


def render(readings: list[RigReading], options: RouterOptions, now: float | None = None) -> str:
    """The config as YAML, its header saying where each figure came from and what was left out."""
    config = litellm_config(readings, options)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(time.time() if now is None else now))
    lines = [f"# LiteLLM proxy config, written by `rigctl rigs --litellm` at {when}."]
    lines.append("# Each rig's max_model_len was read live from its /v1/models; a switch that changes it needs a new")
    lines.append("# config and a restart of the proxy (rigctl rigs --litellm --out DIR says what changed).")
    open_ended = sorted(decided_by_the_rig([r for r in readings if not r.problem], options))
    if open_ended:
        lines.append(f"# {', '.join(open_ended)}: max_input_tokens {NO_PROMPT_REACHES:,}, a limit no prompt reaches: LiteLLM's")
        lines.append("# estimate only steers a prompt away from the smaller rigs; that rig's vLLM refuses what it cannot hold.")
    else:
        lines.append("# LiteLLM refuses (400) a prompt its own count says no rig holds; --largest-decides leaves it to the rig.")
    for reading in readings:
        if reading.problem:
            lines.append(f"# LEFT OUT: {reading.rig} ({reading.url}): {reading.problem}")
    if not options.hooks:
        lines.append("# A timed-out answer is LiteLLM's own 408 here; `--out DIR` adds the hook: a 504 naming the fix.")
    lines.append(
        f"# Run: {options.master_key_env}=... LITELLM_LOCAL_MODEL_COST_MAP=True litellm --config FILE --host 127.0.0.1 --port 4000"
    )
    return "\n".join(lines) + "\n" + yaml.safe_dump(config, sort_keys=False)


def hooks_source(options: RouterOptions) -> str:
    template = resources.files("rigctl.router").joinpath("litellm_hooks.py.txt").read_text()
    return template.format(timeout_s=repr(float(options.timeout_s)))


def changes(old_text: str, readings: list[RigReading], options: RouterOptions) -> list[str]:
    """What a new config changes against the one written before (by deployment id): rigs added,
    gone, or with another context. A config that is not rigctl's YAML is said as such."""
    try:
        old = yaml.safe_load(old_text)
        before = {str(d["model_info"]["id"]): d["model_info"].get("rigctl_max_model_len") for d in old.get("model_list") or []}
    except (yaml.YAMLError, AttributeError, KeyError, TypeError):
        return ["the config there is not one rigctl wrote: replaced"]
    after = {
        str(d["model_info"]["id"]): d["model_info"].get("rigctl_max_model_len")
        for d in litellm_config(readings, options)["model_list"]
    }
    said = []
    for ident in sorted(before.keys() | after.keys()):
        if ident not in after:
            said.append(f"{ident}: gone from the config")
        elif ident not in before:
            said.append(f"{ident}: new, max_model_len {after[ident]:,}" if after[ident] else f"{ident}: new")
        elif before[ident] != after[ident]:
            said.append(f"{ident}: max_model_len {before[ident] or 0:,} -> {after[ident] or 0:,}")
    return said
