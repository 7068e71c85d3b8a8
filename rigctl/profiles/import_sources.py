"""Where a vLLM launch is found, read as words and an environment (ImportSource): a `vllm serve ...`
command line (typed, or a shell script's line), a running process (/proc: its argv and the
environment vLLM reads), a systemd unit (ExecStart, Environment=, EnvironmentFile=) or a docker
compose service (its variables interpolated as docker compose does). profiles/importing.py builds
the profile from it. The core here reads text; the CLI reads /proc, the unit and the compose file."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rigctl.errors import BadInputError, one_line
from rigctl.profiles.envfile import parse_env_text, shell_assignment
from rigctl.redact import redact_argv

# What vLLM (and torch, NCCL, the HF hub under it) read from their environment; the rest of a
# process's environment (PATH, HOME, the login's) is not the engine's configuration.
ENGINE_ENV_PREFIXES = (
    "VLLM_",
    "CUDA_",
    "NCCL_",
    "HF_",
    "HUGGING_FACE_",
    "PYTORCH_",
    "TORCH_",
    "TRANSFORMERS_",
    "TOKENIZERS_",
    "TRITON_",
    "FLASHINFER_",
    "OMP_",
    "NVIDIA_",
)
# vLLM reads these options' values from its environment too (rigctl's launch moves them there)
SECRET_OPTION_ENV = {"api_key": "VLLM_API_KEY", "hf_token": "HF_TOKEN"}
# rigctl's own markers on a server it started: not the owner's configuration
OWN_ENV_PREFIX = "RIGCTL_"
# what `vllm serve` is, spelled the ways owners start it
API_SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")


@dataclass(frozen=True)
class ImportSource:
    """A vLLM launch as found: the words of its command line and its environment."""

    argv: tuple[str, ...]
    env: dict[str, str]
    origin: str  # "the command line", "process 4242", "unit vllm.service", "compose.yaml service vllm"
    how: str  # the rigctl command that imported it, for the file's header
    notes: tuple[str, ...] = ()  # what reading it decided that the owner should know (the environment left out)


def engine_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of an environment vLLM's stack reads (rigctl's own markers left out)."""
    return {k: v for k, v in sorted(env.items()) if k.startswith(ENGINE_ENV_PREFIXES) and not k.startswith(OWN_ENV_PREFIX)}


def left_out(env: Mapping[str, str], origin: str) -> tuple[str, ...]:
    """A note naming what engine_env leaves out of `env` (PATH, HOME, LD_PRELOAD: a login's, not
    vLLM's configuration; rigctl launches vLLM with its own)."""
    dropped = sorted(k for k in env if k not in engine_env(env) and not k.startswith(OWN_ENV_PREFIX))
    if not dropped:
        return ()
    shown = ", ".join(dropped[:6]) + (f" and {len(dropped) - 6} more" if len(dropped) > 6 else "")
    return (f"env {shown} of {origin}: not kept (not what vLLM's stack reads; rigctl launches vLLM with its own)",)


def checked_text(value: bytes, what: str) -> str:
    """Bytes of a name or value as text: non-UTF-8 is refused naming `what` (decoded with
    replacement, a secret would be silently another secret)."""
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise BadInputError(f"{what} is not UTF-8 text: rigctl cannot carry it into a profile") from None


def _logical_lines(text: str) -> list[str]:
    """A script's lines with backslash continuations joined, as a shell reads them."""
    return re.sub(r"\\\r?\n", " ", text).splitlines()


def is_vllm_launch(words: Sequence[str]) -> bool:
    if "serve" in words and any(w == "vllm" or w.endswith("/vllm") for w in words[: words.index("serve")]):
        return True
    return any(m in words for m in API_SERVER_MODULES)


def from_command_line(words: Sequence[str], how: str) -> ImportSource:
    """Words as typed after `--` (leading KEY=value assignments become the environment)."""
    env: dict[str, str] = {}
    rest = list(words)
    while rest and (assignment := shell_assignment(rest[0])) is not None:
        env[assignment[0]] = assignment[1]
        rest.pop(0)
    if rest[:1] in (["env"], ["exec"]):  # `exec vllm serve ...` in a script, `env X=1 vllm serve ...`
        inner = from_command_line(rest[1:], how)
        return ImportSource(inner.argv, {**env, **inner.env}, inner.origin, how)
    if not rest:
        raise BadInputError(
            "no command line to import: give it after --, as in: rigctl profile import NAME -- vllm serve MODEL ..."
        )
    if not is_vllm_launch(rest):
        raise BadInputError(f"not a vLLM launch: {one_line(shlex.join(redact_argv(rest))[:200])} (expected `vllm serve MODEL ...`)")
    return ImportSource(tuple(rest), env, "the command line", how)


def from_script(text: str, where: str, how: str) -> ImportSource:
    """The script's `vllm serve` line, with the variables it exports before it (`export X=...`,
    `X=... vllm serve ...`). `$VAR` in the line is taken from those; an unknown one is refused."""
    env: dict[str, str] = {}
    for number, line in enumerate(_logical_lines(text), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("export ") or (shell_assignment(stripped.split(" ", 1)[0]) and " " not in stripped):
            env.update(parse_env_text(stripped))
            continue
        try:
            words = shlex.split(stripped, comments=True)
        except ValueError as exc:
            if "vllm" in stripped:
                raise BadInputError(f"{where}:{number}: cannot read the line as a shell would: {exc}") from None
            continue
        if not is_vllm_launch(words):
            continue
        expanded = [_expand(w, env, f"{where}:{number}") for w in words]
        found = from_command_line(expanded, how)
        return ImportSource(found.argv, {**env, **found.env}, where, how)
    raise BadInputError(f"{where}: no `vllm serve` line found (a line starting vllm serve, or python -m {API_SERVER_MODULES[0]})")


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def _expand(word: str, env: Mapping[str, str], where: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in env:
            raise BadInputError(f"{where}: ${name} is not set in the file: give the line with its value")
        return env[name]

    return _VAR.sub(value, word)


def from_proc(cmdline: bytes, environ: bytes, pid: int, how: str) -> ImportSource:
    """/proc/PID/cmdline and environ, NUL-separated as the kernel gives them."""
    argv = [checked_text(w, f"process {pid}: a word of its command line") for w in cmdline.split(b"\0") if w]
    env: dict[str, str] = {}
    for item in environ.split(b"\0"):
        name, eq, value = item.partition(b"=")
        if not eq:
            continue
        key = checked_text(name, f"process {pid}: the name of an environment variable")
        if key.startswith(ENGINE_ENV_PREFIXES):  # only what is kept must be text; the rest is left out
            env[key] = checked_text(value, f"process {pid}: env {key}'s value")
        else:
            env[key] = ""
    if not argv:
        raise BadInputError(f"process {pid} has no command line (a kernel thread, or it has just exited)")
    if not is_vllm_launch(argv):
        raise BadInputError(f"process {pid} is not a vLLM server: {one_line(shlex.join(redact_argv(argv))[:200])}")
    return ImportSource(tuple(argv), engine_env(env), f"process {pid}", how, left_out(env, f"process {pid}"))


def from_unit(text: str, where: str, read_env: Any, how: str) -> ImportSource:
    """A unit file (or `systemctl cat`'s output: the unit and its drop-ins, in order): the last
    ExecStart= (a drop-in's empty ExecStart= resets it), Environment= and EnvironmentFile=
    (`read_env(path)` -> its text, None where it cannot be read; a leading - makes it optional)."""
    exec_start: str | None = None
    env: dict[str, str] = {}
    section = ""
    for line in _logical_lines(text):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1]
            continue
        if section != "Service":
            continue
        key, _, value = stripped.partition("=")
        key, value = key.strip(), value.strip()
        if key == "ExecStart":
            exec_start = value or None
        elif key == "Environment":
            for word in shlex.split(value):
                assignment = shell_assignment(word)
                if assignment is not None:
                    env[assignment[0]] = assignment[1]
        elif key == "EnvironmentFile":
            optional = value.startswith("-")
            path = value.lstrip("-")
            content = read_env(path)
            if content is None and not optional:
                raise BadInputError(
                    f"{where}: EnvironmentFile={path} cannot be read (run as a user who can, or give --unit the file)"
                )
            env.update(parse_env_text(content or ""))
    if exec_start is None:
        raise BadInputError(f"{where}: no ExecStart= in [Service]")
    words = shlex.split(exec_start.lstrip("-@+!:"))
    expanded = [_expand(w.replace("$$", "\0"), env, where).replace("\0", "$") for w in words]
    found = from_command_line(expanded, how)
    every = {**env, **found.env}
    return ImportSource(found.argv, engine_env(every), where, how, left_out(every, where))


_COMPOSE_VAR = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


def interpolate(value: Any, env: Mapping[str, str], where: str) -> Any:
    """Every string of a compose document with its variables replaced as `docker compose config`
    replaces them (`$$`, `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`,
    `${VAR?error}`, `${VAR:+alt}`, `${VAR+alt}`), from `env` (the shell's environment over the
    file's .env). A variable with no value and no default is refused, naming it: compose would
    put an empty string there (and a literal key or model name is never what was meant)."""
    if isinstance(value, dict):
        return {k: interpolate(v, env, where) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, where) for v in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(4)
        op, arg = match.group(2), match.group(3) or ""
        present = name in env
        filled = present and env[name] != ""
        if op in (":-", "-"):
            use_default = not filled if op == ":-" else not present
            return interpolate(arg, env, where) if use_default else env[name]
        if op in (":?", "?"):
            if (op == ":?" and not filled) or (op == "?" and not present):
                why = arg or "it is not set"
                raise BadInputError(f"{where}: ${{{name}}} is required: {why} (set it here, or in the .env beside the file)")
            return env[name]
        if op in (":+", "+"):
            return interpolate(arg, env, where) if (filled if op == ":+" else present) else ""
        if not present:
            raise BadInputError(
                f"{where}: ${{{name}}} is not set (in this shell or the .env beside the file): docker compose would put an "
                f"empty string there; set it, or give a default (${{{name}:-value}})"
            )
        return env[name]

    return _COMPOSE_VAR.sub(one, value)


def from_compose(document: Any, service: str, where: str, how: str, variables: Mapping[str, str] | None = None) -> ImportSource:
    """A compose file's service: its `command` (list or string) after the image's entrypoint
    (vllm/vllm-openai's is `vllm serve`), or its own `entrypoint`; `environment` as a map or a list.
    `variables`: what its `${VAR}` are interpolated from (None: nothing is, a `$` stays as written)."""
    if variables is not None:
        document = interpolate(document, variables, where)
    services = document.get("services") if isinstance(document, dict) else None
    if not isinstance(services, dict) or service not in services:
        names = ", ".join(sorted(services)) if isinstance(services, dict) else "none"
        raise BadInputError(f"{where}: no service {service!r} (services: {names})")
    spec = services[service]
    if not isinstance(spec, dict):
        raise BadInputError(f"{where}: service {service!r} is not a mapping")

    def words(value: Any, key: str) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str):
            return shlex.split(value)
        if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
            return [str(v) for v in value]
        raise BadInputError(f"{where}: services.{service}.{key} must be a string or a list of strings")

    entrypoint = words(spec.get("entrypoint"), "entrypoint") or ["vllm", "serve"]
    argv = entrypoint + words(spec.get("command"), "command")
    raw_env = spec.get("environment") or {}
    env: dict[str, str] = {}
    if isinstance(raw_env, dict):
        env = {str(k): "" if v is None else str(v) for k, v in raw_env.items()}
    elif isinstance(raw_env, list):
        env = dict(str(w).partition("=")[::2] for w in raw_env)
    found = from_command_line(argv, how)
    source = ImportSource(found.argv, {**env, **found.env}, f"{where} service {service}", how)
    image = spec.get("image")
    return ImportSource(source.argv, source.env, source.origin + (f" (image {image})" if image else ""), how)
