"""Where profiles live and how a name becomes a resolved Profile.

Search order: the user's profiles directory ($XDG_CONFIG_HOME/rigctl/profiles), then the
examples shipped with rigctl. A user profile may `extends` a shipped one, even one of
the same name (that is how a shipped base is customised).
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rigctl import paths
from rigctl.errors import BadInputError
from rigctl.files import read_input_text
from rigctl.profiles.schema import (
    RIGCTL_KEYS,
    TOP_LEVEL_KEYS,
    Diagnostic,
    Origin,
    Profile,
    ProfileError,
)
from rigctl.toml_lines import key_lines
from rigctl.vllm.options import load_option_table


def shipped_dir() -> Path:
    return Path(str(resources.files("rigctl.profiles") / "examples"))


def user_dir() -> Path:
    """The configured profiles directory ([profiles] dir, RIGCTL_PROFILES_DIR), else the XDG one."""
    from rigctl.config import (
        load_settings,  # config reads TOML helpers from this package
    )

    configured = load_settings().profiles_dir
    return Path(configured).expanduser() if configured else paths.config_dir() / "profiles"


@dataclass(frozen=True)
class Layer:
    """One profile file as written."""

    name: str
    path: Path
    shipped: bool
    text: str
    data: dict[str, Any]
    lines: dict[tuple[str, ...], int]


PROFILE_LIMIT = 1024 * 1024  # a profile is a few hundred bytes; a megabyte is not one


def parse_toml(path: Path, text: str) -> dict[str, Any]:
    try:
        parsed: dict[str, Any] = tomllib.loads(text)
        return parsed
    except RecursionError:
        raise ProfileError([Diagnostic("error", "invalid TOML: nested too deep", file=str(path))]) from None
    except tomllib.TOMLDecodeError as exc:
        # tomllib says "... (at line 7, column 12)": keep its words, lead with the file.
        message = str(exc)
        line = None
        if "(at line " in message:
            position = message.rsplit("(at line ", 1)[1].rstrip(")")
            line = int(position.split(",")[0])
        raise ProfileError([Diagnostic("error", f"invalid TOML: {message}", file=str(path), line=line)]) from exc


class ProfileStore:
    def __init__(self, user: Path | None = None, shipped: Path | None = None) -> None:
        self.user = user or user_dir()
        self.shipped = shipped or shipped_dir()
        self._overrides: dict[Path, str] = {}

    # -- finding files -------------------------------------------------------------

    def _in(self, directory: Path) -> dict[str, Path]:
        if not directory.is_dir():
            return {}
        return {p.stem: p for p in sorted(directory.glob("*.toml"))}

    def names(self) -> list[str]:
        return sorted(set(self._in(self.user)) | set(self._in(self.shipped)))

    def is_shipped(self, path: Path) -> bool:
        return path.resolve().parent == self.shipped.resolve()

    def path_for(self, name: str, *, skip_user: bool = False, relative_to: Path | None = None) -> Path:
        """`relative_to`: the directory a relative path is read from (a parent named by path in
        `extends` is found beside the file that names it, wherever rigctl runs)."""
        candidate = Path(name).expanduser()
        if relative_to is not None and not candidate.is_absolute():
            candidate = relative_to / candidate
        if candidate.suffix == ".toml" and (candidate.exists() or candidate.resolve() in self._overrides):
            return candidate
        if candidate.suffix == ".toml" and ("/" in name or relative_to is not None):
            raise BadInputError(f"no profile file {candidate}")
        if not skip_user and name in self._in(self.user):
            return self._in(self.user)[name]
        if name in self._in(self.shipped):
            return self._in(self.shipped)[name]
        close = difflib.get_close_matches(name, self.names(), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; profiles: {', '.join(self.names()) or 'none'}"
        raise BadInputError(f"no profile named {name!r}{hint}")

    def layer(self, path: Path) -> Layer:
        override = self._overrides.get(path.resolve())
        text = override if override is not None else read_input_text(path, PROFILE_LIMIT, "profile")
        return Layer(
            name=path.stem, path=path, shipped=self.is_shipped(path), text=text, data=parse_toml(path, text), lines=key_lines(text)
        )

    # -- resolving -----------------------------------------------------------------

    def load(self, name_or_path: str) -> Profile:
        """The profile with its `extends` chain merged; ProfileError if a file is unusable."""
        chain = self._chain(self.layer(self.path_for(name_or_path)))
        return self._merge(chain)

    def load_candidate(self, path: Path, text: str) -> Profile:
        """The profile `path` would resolve to if it held `text`; the disk is not touched."""
        self._overrides[path.resolve()] = text
        try:
            return self._merge(self._chain(self.layer(path)))
        finally:
            del self._overrides[path.resolve()]

    def _chain(self, first: Layer) -> list[Layer]:
        chain = [first]
        seen = {first.path.resolve()}
        while True:
            current = chain[-1]
            parent = current.data.get("extends")
            if parent is None:
                return chain
            line = current.lines.get(("extends",))
            names = " -> ".join([*(layer.name for layer in chain), str(parent)])
            if not isinstance(parent, str) or not parent:
                raise ProfileError([Diagnostic("error", "must be the name of another profile", "extends", str(current.path), line)])
            # A user profile extending its own name customises the shipped one.
            skip_user = parent == current.name and not current.shipped
            try:
                by_path = parent.endswith(".toml") or "/" in parent
                path = self.path_for(parent, skip_user=skip_user, relative_to=current.path.parent if by_path else None)
            except BadInputError as exc:
                raise ProfileError(
                    [Diagnostic("error", f"missing parent in {names}: {exc}", "extends", str(current.path), line)]
                ) from exc
            if path.resolve() in seen:
                raise ProfileError([Diagnostic("error", f"extends cycle: {names}", "extends", str(current.path), line)])
            seen.add(path.resolve())
            chain.append(self.layer(path))

    def _merge(self, chain: list[Layer]) -> Profile:
        tables: dict[str, dict[str, Any]] = {"vllm": {}, "env": {}, "rigctl": {}, "verify": {}}
        scalars: dict[str, Any] = {}
        origins: dict[str, Origin] = {}
        diagnostics: list[Diagnostic] = []
        for layer in reversed(chain):  # the root first, so children overwrite
            diagnostics += _shape_errors(layer)
            for key, value in layer.data.items():
                if key in tables and isinstance(value, dict):
                    for sub, sub_value in value.items():
                        norm = sub.replace("-", "_") if key != "env" else sub
                        # a child's kebab spelling replaces the parent's snake one
                        for old in [k for k in tables[key] if (k.replace("-", "_") if key != "env" else k) == norm]:
                            del tables[key][old]
                        tables[key][sub] = sub_value
                        origins[f"{key}.{sub}"] = Origin(layer.path, layer.lines.get((key, sub)), layer.name)
                elif key not in tables and key != "extends":
                    scalars[key] = value
                    origins[key] = Origin(layer.path, layer.lines.get((key,)), layer.name)
        first = chain[0]
        return Profile(
            name=first.name,
            path=first.path,
            shipped=first.shipped,
            description=str(scalars.get("description", "")),
            model=scalars.get("model") if isinstance(scalars.get("model"), str) else None,
            vllm=tables["vllm"],
            env=tables["env"],
            rigctl=tables["rigctl"],
            chain=tuple(layer.name for layer in chain),
            verify=tables["verify"],
            origins=origins,
            load_diagnostics=tuple(diagnostics),
        )


def _shape_errors(layer: Layer) -> list[Diagnostic]:
    """Top-level keys and table shapes; value checks come later, against vLLM's options."""
    out = []
    for key, value in layer.data.items():
        line = layer.lines.get((key,))
        if key not in TOP_LEVEL_KEYS:
            close = difflib.get_close_matches(key, TOP_LEVEL_KEYS, n=1)
            if load_option_table().resolve(key) is not None:
                hint = "; it is a vllm serve option: put it in the [vllm] table"
            elif close:
                hint = f"; did you mean {close[0]}?"
            else:
                hint = f" (allowed: {', '.join(TOP_LEVEL_KEYS)})"
            out.append(Diagnostic("error", f"not a profile key{hint}", key, str(layer.path), line))
        elif key in ("vllm", "env", "rigctl", "verify") and not isinstance(value, dict):
            out.append(Diagnostic("error", "must be a table", key, str(layer.path), line))
        elif key in ("description", "notes", "model") and not isinstance(value, str):
            out.append(Diagnostic("error", "must be a string", key, str(layer.path), line))
    for key in layer.data.get("rigctl", {}) if isinstance(layer.data.get("rigctl"), dict) else ():
        if key not in RIGCTL_KEYS:
            out.append(
                Diagnostic(
                    "error",
                    f"not a rigctl setting (allowed: {', '.join(RIGCTL_KEYS)})",
                    key,
                    str(layer.path),
                    layer.lines.get(("rigctl", key)),
                )
            )
    return out
