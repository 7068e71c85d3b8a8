"""Where a model's config.json and weights are on this machine (a local dir, or the Hugging Face
cache). The command line itself is read by rigctl/vllm/flags.py."""

from __future__ import annotations

import os
from pathlib import Path

from rigctl.errors import BadInputError


def local_model_problem(model: str) -> str | None:
    """Why vLLM could not load `model` when it is written as a path on this machine (absolute,
    ~ or relative): it is not there, or it is a dir without a config. A Hugging Face id is not
    a path, and is never asked about here."""
    if not model.startswith(("/", "~", "./", "../")):
        return None
    path = Path(model).expanduser()
    try:
        if not path.exists():
            return f"{model}: no such file or directory on this machine"
        if path.is_dir() and not any((path / name).is_file() for name in ("config.json", "params.json")):
            return f"{model}: a directory without a config.json, not a model vLLM can load"
    except OSError as exc:
        return f"{model}: {exc.strerror or exc}"
    return None


def hub_cache() -> Path:
    """Where Hugging Face keeps downloaded models (HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def find_model_dir(model: str) -> Path | None:
    """A local model dir as given, else the newest snapshot of that id in the HF cache."""
    given = Path(model).expanduser()
    if (given / "config.json").is_file():
        return given
    entry = hub_cache() / ("models--" + model.replace("/", "--")) / "snapshots"
    snapshots = (
        sorted((p for p in entry.glob("*") if (p / "config.json").is_file()), key=lambda p: p.stat().st_mtime, reverse=True)
        if entry.is_dir()
        else []
    )
    return snapshots[0] if snapshots else None


def model_dir_or_error(model: str | None) -> Path:
    if not model:
        raise BadInputError("no model: name a profile, or give --config PATH or --model DIR")
    found = find_model_dir(model)
    if found is None:
        raise BadInputError(
            f"no config.json for {model}: it is not a local dir and not in the Hugging Face cache "
            f"({hub_cache()}); give --config PATH (the model's config.json)"
        )
    return found
