"""What a serving profile is, and the diagnostics that point into its files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rigctl.errors import BadInputError, one_line
from rigctl.severity import Severity

TOP_LEVEL_KEYS = ("description", "extends", "model", "notes", "vllm", "env", "rigctl", "verify")
VERIFY_KEYS = (
    "chat",
    "tools",
    "min_context",
    "requests",
    "timeout_s",
    "answers",
    "tools_streamed",
    "min_acceptance",
)  # as config.toml's [verify]
RIGCTL_KEYS = ("boot_timeout", "vllm_command", "extra_args", "env_file")

# The knobs every display shows first, in this order.
FIRST_CLASS = (
    "tensor_parallel_size",
    "data_parallel_size",
    "quantization",
    "max_model_len",
    "max_num_seqs",
    "async_scheduling",
    "speculative_config",
    "kv_cache_dtype",
    "gpu_memory_utilization",
)


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    message: str
    key: str | None = None
    file: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        return self.text(kind=True)

    def text(self, kind: bool = True) -> str:
        """file:line: [warning: ]key: message, on one line (`kind` False: without the warning tag)."""
        where = ":".join(p for p in (self.file, str(self.line) if self.line else None) if p)
        head = f"{where}: " if where else ""
        tag = "warning: " if kind and self.severity != "error" else ""
        key = f"{self.key}: " if self.key else ""
        return one_line(f"{head}{tag}{key}{self.message}")


class ProfileError(BadInputError):
    """A profile that cannot be used; carries every diagnostic, not only the first."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        super().__init__("\n".join(str(d) for d in diagnostics))


@dataclass(frozen=True)
class Origin:
    """Where a resolved value was written."""

    path: Path
    line: int | None
    profile: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else str(self.path)


@dataclass(frozen=True)
class Profile:
    """A profile after `extends`: the child's values over its parents', key by key."""

    name: str
    path: Path
    shipped: bool
    description: str
    model: str | None
    vllm: dict[str, Any]
    env: dict[str, Any]
    rigctl: dict[str, Any]
    chain: tuple[str, ...]  # this profile, then each parent
    verify: dict[str, Any] = field(default_factory=dict)  # [verify]: over config.toml's, key by key
    origins: dict[str, Origin] = field(default_factory=dict)  # "vllm.max_num_seqs" -> where
    load_diagnostics: tuple[Diagnostic, ...] = ()

    def origin(self, dotted: str) -> Origin | None:
        return self.origins.get(dotted)

    def diagnostic(self, severity: Severity, dotted: str | None, message: str) -> Diagnostic:
        """A diagnostic pointing at where `dotted` (e.g. "vllm.max_num_seq") was written."""
        origin = self.origins.get(dotted) if dotted else None
        path = origin.path if origin else self.path
        key = dotted.split(".", 1)[1] if dotted and dotted.startswith(("vllm.", "env.", "rigctl.")) else dotted
        return Diagnostic(severity, message, key=key, file=str(path), line=origin.line if origin else None)
