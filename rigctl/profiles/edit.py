"""Comment-preserving edits of user profiles: tomlkit in, validation, atomic write out.

An edit that would make the profile invalid is refused and the file stays byte-identical.
Shipped profiles are never edited in place.
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.container import Container
from tomlkit.items import Table

from rigctl.atomic import write_text_atomic
from rigctl.errors import BadInputError
from rigctl.gpu.model import RigInfo
from rigctl.paths import ensure_private_dir
from rigctl.profiles.envfile import env_line
from rigctl.profiles.importing import ImportedProfile, inline_toml, with_env_file
from rigctl.profiles.schema import Diagnostic, ProfileError
from rigctl.profiles.store import ProfileStore
from rigctl.profiles.validate import validate
from rigctl.profiles.vllm_version import OptionTables
from rigctl.redact import is_secret_env, is_secret_option

TABLES = ("vllm", "env", "rigctl")
SCALARS = ("description", "model", "notes", "extends")


def parse_value(raw: str) -> Any:
    """A CLI value as TOML (8, 0.9, true, "x", { method = "mtp" }); a bare word stays a string."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _split(key: str) -> tuple[str | None, str]:
    table, dot, leaf = key.partition(".")
    if dot and table in TABLES:
        return table, leaf
    if key in SCALARS:
        return None, key
    raise BadInputError(f"{key!r}: give vllm.<option>, env.<NAME>, rigctl.<setting> or one of {', '.join(SCALARS)}")


def _editable(store: ProfileStore, name: str) -> Path:
    path = store.path_for(name)
    if store.is_shipped(path):
        raise BadInputError(
            f"{name} is a shipped example and is not edited in place; copy it first: rigctl profile new my-{name} --from {name}"
        )
    return path


def _existing_key(table: Container | Table, leaf: str, is_env: bool) -> str | None:
    """The key as already written, kebab or snake, so an edit updates it in place."""
    for existing in table:
        if existing == leaf or (not is_env and existing.replace("-", "_") == leaf.replace("-", "_")):
            return existing
    return None


def holds_secret(text: str) -> bool:
    """Does this profile file itself set a key, token or password?"""
    data = tomllib.loads(text)
    vllm, env = data.get("vllm", {}), data.get("env", {})
    return any(is_secret_option(k) and not isinstance(v, bool) for k, v in vllm.items()) or any(is_secret_env(k) for k in env)


def _commit(store: ProfileStore, path: Path, text: str, tables: OptionTables, rig: RigInfo | None) -> list[Diagnostic]:
    """Validate the new text as the resolved profile it would be; write only if clean of errors.
    A new file that holds a secret is created 0600; an existing file keeps its mode (and is
    warned about when others can read the secret now in it)."""
    profile = store.load_candidate(path, text)
    diagnostics = validate(profile, tables.choose(profile).table, rig)  # the vLLM it will run, edit included
    errors = [d for d in diagnostics if d.severity == "error"]
    if errors:
        raise ProfileError(errors)
    secret = holds_secret(text)
    mode = None if path.exists() else (0o600 if secret else 0o644)
    write_text_atomic(path, text, mode=mode)
    warnings = [d for d in diagnostics if d.severity != "error"]
    if secret and path.stat().st_mode & 0o077:
        warnings.append(
            Diagnostic(
                "warning",
                f"holds a secret and others can read it (mode {path.stat().st_mode & 0o777:o}): chmod 600 {path}",
                file=str(path),
            )
        )
    return warnings


def set_value(
    store: ProfileStore, name: str, key: str, raw: str, tables: OptionTables, rig: RigInfo | None = None
) -> list[Diagnostic]:
    path = _editable(store, name)
    doc = tomlkit.parse(path.read_text())
    section, leaf = _split(key)
    value = inline_toml(parse_value(raw))
    if section is None:
        doc[leaf] = value
    else:
        if section not in doc:
            doc.add(tomlkit.nl())
            doc[section] = tomlkit.table()
        target = doc[section]
        existing = _existing_key(target, leaf, section == "env")
        target[existing or leaf] = value
    return _commit(store, path, tomlkit.dumps(doc), tables, rig)


def unset_value(store: ProfileStore, name: str, key: str, tables: OptionTables, rig: RigInfo | None = None) -> list[Diagnostic]:
    path = _editable(store, name)
    doc = tomlkit.parse(path.read_text())
    section, leaf = _split(key)
    found = doc if section is None else doc.get(section)
    container = found if isinstance(found, (Container, Table)) else None
    existing = None if container is None else _existing_key(container, leaf, section == "env")
    if existing is None:
        raise BadInputError(f"{key} is not set in {path}" + _inherited(store, name, section, leaf))
    assert container is not None
    del container[existing]
    return _commit(store, path, tomlkit.dumps(doc), tables, rig)


def _inherited(store: ProfileStore, name: str, section: str | None, leaf: str) -> str:
    """Where an inherited key comes from, and what the owner can do: TOML has no "not set", so a
    child cannot take a parent's key away; it can give its own value."""
    if section is None:
        return ""
    profile = store.load(name)
    values = profile.env if section == "env" else profile.vllm if section == "vllm" else profile.rigctl
    found = next((k for k in values if k == leaf or (section != "env" and k.replace("-", "_") == leaf.replace("-", "_"))), None)
    if found is None:
        return ""
    origin = profile.origin(f"{section}.{found}")
    where = (
        f"{origin.profile} ({origin.path}:{origin.line})" if origin and origin.line else (origin.profile if origin else "a parent")
    )
    return (
        f": it comes from {where}, and a profile cannot remove a parent's key; give it its own value here: "
        f"rigctl profile set {name} {section}.{leaf} VALUE"
    )


def new_profile(
    store: ProfileStore, name: str, base: str, tables: OptionTables, rig: RigInfo | None = None
) -> tuple[Path, list[Diagnostic]]:
    if "/" in name or not name or name.startswith("."):
        raise BadInputError(f"{name!r} is not a profile name (letters, digits, - and _)")
    path = store.user / f"{name}.toml"
    if path.exists():
        raise BadInputError(f"{path} already exists")
    store.load(base)  # fails early on a bad base
    today = dt.date.today().isoformat()
    text = (
        f"# Created by `rigctl profile new {name} --from {base}` on {today}.\n"
        f"# Values here override {base} key by key; `rigctl profile show {name}` shows where each comes from.\n"
        # not the parent's words: they describe the parent, and `profile list` would show two alike
        f"description = {tomlkit.string(f'{base} with changes: say which here').as_string()}\n"
        f"extends = {tomlkit.string(base).as_string()}\n\n[vllm]\n\n[env]\n"
    )
    return path, _commit(store, path, text, tables, rig)


PROFILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def import_profile(
    store: ProfileStore,
    name: str,
    imported: ImportedProfile,
    tables: OptionTables,
    rig: RigInfo | None = None,
    replace: bool = False,
) -> tuple[Path, Path | None, list[Diagnostic]]:
    """Write an imported profile (validated first, as every edit) and, where the launch had
    secrets, the 0600 env file it names. Nothing is left behind when validation refuses it."""
    if not PROFILE_NAME.fullmatch(name):
        shown = name if len(name) <= 40 else name[:40] + "..."
        raise BadInputError(f"{shown!r} is not a profile name (1 to 64 letters, digits, -, _ and ., not first - or .)")
    path = store.user / f"{name}.toml"
    if path.exists() and not replace:
        raise BadInputError(f"{path} already exists (--replace to write over it)")
    if not path.exists() and name in store.names():
        raise BadInputError(f"{name} is a shipped example's name: choose another (the user's would hide it)")
    text, env_path = imported.text, None
    if imported.secrets:
        env_path = store.user.parent / "secrets" / f"{name}.env"
        text = with_env_file(text, str(env_path))
    store.user.mkdir(parents=True, exist_ok=True)
    previous = env_path.read_bytes() if env_path is not None and env_path.exists() else None
    if env_path is not None:
        try:
            lines = "".join(env_line(k, v) + "\n" for k, v in imported.secrets.items())
        except ValueError as exc:  # a line break in a secret: no env file line can carry it
            raise BadInputError(f"{name}: {exc}") from None
        ensure_private_dir(env_path.parent)
        write_text_atomic(env_path, lines, mode=0o600)
    try:
        return path, env_path, _commit(store, path, text, tables, rig)
    except BaseException:
        if env_path is not None:  # the profile was refused: the secrets file goes back to what it was
            if previous is None:
                env_path.unlink(missing_ok=True)
            else:
                write_text_atomic(env_path, previous.decode(), mode=0o600)
        raise
