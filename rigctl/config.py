"""rigctl's own settings: defaults, then $XDG_CONFIG_HOME/rigctl/config.toml, then environment.

Every effective value remembers where it came from (`rigctl config` shows it). An invalid
file is an error naming the key and line, never a silent default.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from rigctl import paths
from rigctl.errors import BadInputError
from rigctl.files import read_input_text
from rigctl.rig_table import RemoteRig, remote_rigs
from rigctl.rules import Amount, Choice, Command, Count, Flag, Fraction, Listen, Rule, RuleError, Seconds, Text, Url, complaint
from rigctl.toml_lines import key_lines, line_of

LAUNCHERS = ("process", "systemd", "docker")


@dataclass(frozen=True)
class Settings:
    launcher: str = "process"
    vllm_command: tuple[str, ...] = ("vllm",)
    profiles_dir: str = ""  # empty: $XDG_CONFIG_HOME/rigctl/profiles
    boot_timeout: float = 900.0  # seconds: a cold 27B boot with torch.compile can take minutes
    stop_grace: float = 30.0  # seconds between SIGTERM and SIGKILL
    kill_wait: float = 10.0  # seconds after SIGKILL before a process that stays is reported
    lock_wait: float = 0.0  # seconds a second switch waits for the rig lock (0: refuse at once)
    rig_interval: float = 1.0  # TUI refresh of the GPUs
    metrics_interval: float = 1.0  # TUI refresh of /metrics
    theme: str = "textual-dark"
    endpoint: str = ""  # empty: the active profile's host and port
    systemd_unit: str = "vllm.service"
    systemd_user: bool = False
    systemd_dropin_dir: str = ""  # empty: /etc/systemd/system/<unit>.d or ~/.config/systemd/user/<unit>.d
    docker_image: str = "vllm/vllm-openai:v0.33.0"
    docker_container: str = "rigctl-vllm"
    docker_hf_cache: str = "~/.cache/huggingface"
    prometheus_url: str = ""  # empty: the serving record is rigctl's own (record.sqlite)
    prometheus_timeout: float = 30.0  # seconds for the whole answer to one query
    record_interval: float = 10.0  # seconds per row of the serving record (TUI and `rigctl record`)
    record_warmup: float = 300.0  # seconds of a boot's first traffic left out of its comparable hit rate
    record_min_prefix_queries: float = 20000.0  # prefix tokens queried before a hit rate is compared
    record_regression_points: float = 0.10  # a fall of the hit rate this large (0.10: 10 points) is flagged
    drain_timeout: float = 120.0  # seconds a switch, restart or stop waits for running requests to finish
    # [verify]: what the apps in front of this rig need of every boot (a profile's [verify] overrides)
    verify_chat: bool | None = None  # None: a chat completion when the model has a chat template
    verify_tools: bool = False  # a request with tools and tool_choice "auto"
    verify_min_context: int = 0  # max_model_len on /v1/models at least this
    verify_requests: str = ""  # a JSONL of the owner's own requests (relative to the config dir)
    verify_answers: str = ""  # a JSONL of prompts with their known answers, sent greedy (relative to the config dir)
    verify_tools_streamed: bool = False  # a streamed chat with a named tool must stream a tool call
    verify_min_acceptance: float = 0.0  # speculative decoding: accepted share of drafted tokens at least this
    verify_timeout: float = 60.0  # seconds for the whole verification
    # s a switch through the front door awaits the apps' own first answers from the new server (a
    # status their client never got before rolls it back: gateway/judge.py); 0: the apps do not judge
    verify_apps_s: float = 10.0
    verify_declared: bool = False  # config.toml has a [verify] table: the apps' needs are written down
    # [alerts]: what goes wrong while the engine looks healthy (rigctl/alerts/)
    alerts_stall: float = 60.0  # s with requests waiting and no token produced
    alerts_queue: float = 30.0  # s of mean queue time over the window
    alerts_window: float = 60.0  # s: the window queue time and preemptions are judged over
    alerts_preemptions: float = 30.0  # preemptions a minute, over the window
    alerts_kv_full: float = 120.0  # s of the KV cache full with requests waiting
    alerts_throttle: float = 60.0  # s of thermal or hardware clock throttling
    alerts_command: tuple[str, ...] = ()  # argv run with each alert as JSON on stdin (ntfy, mail, a webhook)
    alerts_command_timeout: float = 10.0  # s the command may take
    # [supervise]: the watch service restarts the last good profile after the engine died
    supervise_restart: bool = False
    supervise_max_restarts: int = 3  # restarts an hour at most
    # also start the last good profile when the service finds the rig down (a reboot, a power cut);
    # left out: on when restart is
    supervise_start_on_boot: bool | None = None
    # [exporter]: rigctl exporter, for the owner's Prometheus
    exporter_listen: str = "127.0.0.1:9477"  # a port of rigctl's own; loopback unless --listen says otherwise
    exporter_rig: str = ""  # the `rig` label; empty: the hostname
    # [gateway]: rigctl gateway, the front door the apps use (docs/guide/front-door.md)
    gateway_listen: str = ""  # empty: the served (else last good) profile's port, on 127.0.0.1
    gateway_hold_s: float = 600.0  # s a request may wait at the door through a switch (then 503 + Retry-After)
    gateway_hold_requests: int = 1024  # requests held at once at most
    gateway_hold_mb: int = 256  # MiB of held requests' bodies the door keeps; the rest waits in the apps' sockets
    # s a forwarded request may wait for the first byte of its answer before the door asks vLLM's
    # /health whether it still lives (no answer there: the app gets a 502; a slow generation never
    # does); 0: never ask
    gateway_silent_s: float = 30.0
    # the bounds on the apps' side (nginx's client_header_timeout, keepalive_timeout and
    # client_body_timeout; 0: none): a head must arrive whole within header_s, a kept-alive
    # connection may wait keepalive_s for its next request, a body may pause body_s between reads
    gateway_header_s: float = 60.0
    gateway_keepalive_s: float = 75.0
    gateway_body_s: float = 60.0
    # the apps' connections kept at once; at the cap the oldest with no request in it is closed for
    # a new one. 0: half the descriptors left after a reserve (the limit is raised to its hard limit)
    gateway_max_connections: int = 0
    # every forwarded request kept in trace files a bench replays (workload trace = "gateway"), in
    # the state dir's gateway-traces/, a file per record_mb or record_hours, the oldest removed past keep_mb
    gateway_record: bool = False
    gateway_record_mb: int = 64
    gateway_record_hours: float = 24.0
    gateway_keep_mb: int = 2048
    rigs: tuple[RemoteRig, ...] = ()  # [rigs.NAME]: rigs driven over SSH (`rigctl --rig NAME ...`)
    sources: dict[str, str] = field(default_factory=dict, compare=False)


# The rule of each Settings field, declared once: config.toml, a profile's [verify] and [rigctl]
# tables and the flags that stand for a key parse by these (rigctl/rules.py; tests/properties
# holds every shared key's rule equal wherever it is read).
RECORD_INTERVAL = Seconds(low=0.5, high=3600)
RULES: dict[str, Rule] = {
    "launcher": Choice(LAUNCHERS),
    "vllm_command": Command(),
    "profiles_dir": Text("the path of a directory"),
    "boot_timeout": Seconds(positive=True),
    "stop_grace": Seconds(),
    "kill_wait": Seconds(),
    "lock_wait": Seconds(),
    "rig_interval": Seconds(),
    "metrics_interval": Seconds(),
    "theme": Text(),
    "endpoint": Text(),
    "systemd_unit": Text(),
    "systemd_user": Flag(),
    "systemd_dropin_dir": Text("the path of a directory"),
    "docker_image": Text(),
    "docker_container": Text(),
    "docker_hf_cache": Text("the path of a directory"),
    "prometheus_url": Url(),
    "prometheus_timeout": Seconds(),
    "record_interval": RECORD_INTERVAL,
    "record_warmup": Seconds(),
    "record_min_prefix_queries": Amount("prefix tokens queried"),
    "record_regression_points": Fraction("the hit rate: the fall flagged (0.10 is 10 points)", "0.10"),
    "drain_timeout": Seconds(),
    "verify_chat": Flag(),
    "verify_tools": Flag(),
    "verify_min_context": Count("tokens"),
    "verify_requests": Text("the path of a JSONL file"),
    "verify_answers": Text("the path of a JSONL file"),
    "verify_tools_streamed": Flag(),
    "verify_min_acceptance": Fraction("drafted tokens"),
    "verify_timeout": Seconds(positive=True, high=86400),
    "verify_apps_s": Seconds(),
    "alerts_stall": Seconds(),
    "alerts_queue": Seconds(),
    "alerts_window": Seconds(),
    "alerts_preemptions": Amount("preemptions a minute"),
    "alerts_kv_full": Seconds(),
    "alerts_throttle": Seconds(),
    "alerts_command": Command('["ntfy", "publish", "rig"]', line_ok=False, empty_ok=True),
    "alerts_command_timeout": Seconds(),
    "supervise_restart": Flag(),
    "supervise_max_restarts": Count("restarts an hour"),
    "supervise_start_on_boot": Flag(),
    "exporter_listen": Listen(),
    "exporter_rig": Text(),
    "gateway_listen": Listen(empty_ok=True),
    "gateway_hold_s": Seconds(),
    "gateway_hold_requests": Count("requests"),
    "gateway_hold_mb": Count("MiB"),
    "gateway_silent_s": Seconds(),
    "gateway_header_s": Seconds(),
    "gateway_keepalive_s": Seconds(),
    "gateway_body_s": Seconds(),
    "gateway_max_connections": Count("connections"),
    "gateway_record": Flag(),
    "gateway_record_mb": Count("MiB"),
    "gateway_record_hours": Amount("hours"),
    "gateway_keep_mb": Count("MiB"),
}


# config.toml layout: table -> key -> Settings field
LAYOUT: dict[str, dict[str, str]] = {
    "server": {
        "launcher": "launcher",
        "vllm_command": "vllm_command",
        "boot_timeout": "boot_timeout",
        "stop_grace": "stop_grace",
        "kill_wait": "kill_wait",
        "lock_wait": "lock_wait",
        "endpoint": "endpoint",
        "drain_timeout": "drain_timeout",
    },
    "profiles": {"dir": "profiles_dir"},
    "tui": {"rig_interval": "rig_interval", "metrics_interval": "metrics_interval", "theme": "theme"},
    "systemd": {"unit": "systemd_unit", "user": "systemd_user", "dropin_dir": "systemd_dropin_dir"},
    "docker": {"image": "docker_image", "container": "docker_container", "hf_cache": "docker_hf_cache"},
    "prometheus": {"url": "prometheus_url", "timeout": "prometheus_timeout"},
    "verify": {
        "chat": "verify_chat",
        "tools": "verify_tools",
        "min_context": "verify_min_context",
        "requests": "verify_requests",
        "answers": "verify_answers",
        "tools_streamed": "verify_tools_streamed",
        "min_acceptance": "verify_min_acceptance",
        "timeout_s": "verify_timeout",
        "apps_s": "verify_apps_s",
    },
    "alerts": {
        "stall_s": "alerts_stall",
        "queue_s": "alerts_queue",
        "window_s": "alerts_window",
        "preemptions_per_min": "alerts_preemptions",
        "kv_full_s": "alerts_kv_full",
        "throttle_s": "alerts_throttle",
        "command": "alerts_command",
        "command_timeout_s": "alerts_command_timeout",
    },
    "supervise": {
        "restart": "supervise_restart",
        "max_restarts": "supervise_max_restarts",
        "start_on_boot": "supervise_start_on_boot",
    },
    "exporter": {"listen": "exporter_listen", "rig": "exporter_rig"},
    "gateway": {
        "listen": "gateway_listen",
        "hold_s": "gateway_hold_s",
        "hold_requests": "gateway_hold_requests",
        "hold_mb": "gateway_hold_mb",
        "silent_s": "gateway_silent_s",
        "header_s": "gateway_header_s",
        "keepalive_s": "gateway_keepalive_s",
        "body_s": "gateway_body_s",
        "max_connections": "gateway_max_connections",
        "record": "gateway_record",
        "record_mb": "gateway_record_mb",
        "record_hours": "gateway_record_hours",
        "keep_mb": "gateway_keep_mb",
    },
    "record": {
        "interval": "record_interval",
        "warmup_s": "record_warmup",
        "min_prefix_queries": "record_min_prefix_queries",
        "regression_points": "record_regression_points",
    },
}
ENV = {
    "RIGCTL_LAUNCHER": "launcher",
    "RIGCTL_VLLM_COMMAND": "vllm_command",
    "RIGCTL_BOOT_TIMEOUT": "boot_timeout",
    "RIGCTL_ENDPOINT": "endpoint",
    "RIGCTL_THEME": "theme",
    "RIGCTL_PROFILES_DIR": "profiles_dir",
}


def config_path() -> Path:
    override = os.environ.get("RIGCTL_CONFIG")
    return Path(override) if override else paths.config_dir() / "config.toml"


def _coerce(name: str, value: Any, where: str) -> Any:
    try:
        return RULES[name].parse(value)
    except RuleError as exc:
        raise BadInputError(f"{where}: {complaint(exc, value)}") from None


def load_settings(env: dict[str, str] | None = None) -> Settings:
    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    sources = {f.name: "default" for f in fields(Settings) if f.name not in DERIVED}
    path = config_path()
    if path.is_file():
        text = read_input_text(path, 1024 * 1024, "config file")
        try:
            data = tomllib.loads(text)
        except RecursionError:
            raise BadInputError(f"{path}: invalid TOML: nested too deep") from None
        except tomllib.TOMLDecodeError as exc:
            raise BadInputError(f"{path}: invalid TOML: {exc}") from exc
        lines = key_lines(text)
        values["verify_declared"] = isinstance(data.get("verify"), dict)
        if "rigs" in data:
            values["rigs"] = remote_rigs(data.pop("rigs"), path, lines)
            sources.update({f"rigs.{r.name}": f"{path}:{line_of(lines, 'rigs', r.name)}" for r in values["rigs"]})
        for table, entries in data.items():
            where_table = f"{path}:{line_of(lines, table)}: {table}"
            if table not in LAYOUT or not isinstance(entries, dict):
                raise BadInputError(f"{where_table}: not a config table (tables: {', '.join([*LAYOUT, 'rigs.NAME'])})")
            for key, value in entries.items():
                where = f"{path}:{line_of(lines, table, key)}: {table}.{key}"
                if key not in LAYOUT[table]:
                    raise BadInputError(f"{where}: not a setting (in [{table}]: {', '.join(LAYOUT[table])})")
                name = LAYOUT[table][key]
                values[name] = _coerce(name, value, where)
                sources[name] = f"{path}:{line_of(lines, table, key)}"
    for var, name in ENV.items():
        if env.get(var):
            raw: Any = env[var]
            if name == "boot_timeout":
                try:
                    raw = float(raw)
                except ValueError as exc:
                    raise BadInputError(f"{var}: must be a number of seconds") from exc
            values[name] = _coerce(name, raw, var)
            sources[name] = f"env {var}"
    return Settings(**values, sources=sources)


DERIVED = ("sources", "verify_declared", "rigs")  # said by load_settings (rigs: tables of their own), never one key


def remote_rig(settings: Settings, name: str) -> RemoteRig:
    """The `[rigs.NAME]` entry called `name` (BadInputError naming the ones there are)."""
    for rig in settings.rigs:
        if rig.name == name and not rig.ssh:
            raise BadInputError(f'rig {name!r} in {config_path()} has no ssh (only a url): add ssh = "user@host" to drive it')
        if rig.name == name:
            return rig
    known = ", ".join(r.name for r in settings.rigs) or "none yet"
    raise BadInputError(f'no rig {name!r} in {config_path()} (rigs: {known}); add [rigs.{name}] ssh = "user@host"')


def as_table(settings: Settings) -> dict[str, Any]:
    return {f.name: getattr(settings, f.name) for f in fields(Settings) if f.name not in DERIVED}


def field_location(name: str) -> tuple[str, str]:
    """The (table, key) of config.toml that holds Settings field `name`."""
    for table, entries in LAYOUT.items():
        for key, field_name in entries.items():
            if field_name == name:
                return table, key
    raise KeyError(name)


def save_setting(name: str, value: Any) -> Path:
    """Write one setting into config.toml, keeping every comment and other key as written.

    The value is checked the way load_settings checks it, so a save never leaves a file
    that the next start refuses.
    """
    import tomlkit

    from rigctl.atomic import write_text_atomic

    table, key = field_location(name)
    path = config_path()
    _coerce(name, value, f"{path}: {table}.{key}")
    document = tomlkit.parse(path.read_text()) if path.is_file() else tomlkit.document()
    if table not in document:
        document[table] = tomlkit.table()
    document[table][key] = list(value) if isinstance(value, tuple) else value
    write_text_atomic(path, tomlkit.dumps(document))
    return path
