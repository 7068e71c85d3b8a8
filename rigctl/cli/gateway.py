"""rigctl gateway: the rig's front door, the one address the apps use. Run alone (a systemd unit of
its own): it forwards to the vLLM rigctl serves, holds the apps' requests through a switch, and
counts the requests in flight exactly. `--to URL` stands it in front of any OpenAI-compatible
server instead (no control channel: nothing switches behind it)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rigctl.cli import common
from rigctl.errors import BadInputError, RigctlError
from rigctl.redact import without_userinfo

if TYPE_CHECKING:
    from rigctl.config import Settings
    from rigctl.gateway.recording import Recording

from rigctl.gateway.door_file import API_KEY_ENV


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "gateway")
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="where the apps connect (default: [gateway] listen, else 127.0.0.1 and the served profile's port)",
    )
    p.add_argument("--to", metavar="URL", help="stand in front of this server instead of the one rigctl serves")
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="listen beyond loopback; then every request must carry the key of --api-key-file or $" + API_KEY_ENV,
    )
    p.add_argument("--api-key-file", type=Path, metavar="FILE", help="the key the apps must send (a file of mode 0600)")
    p.add_argument("--grace", type=float, default=30.0, metavar="S", help="at a stop, seconds the answers in flight get (30)")
    p.add_argument(
        "--record",
        action="store_true",
        help="keep every forwarded request in trace files for a bench to replay (also [gateway] record = true)",
    )
    p.add_argument(
        "--out",
        type=Path,
        metavar="TRACE.jsonl",
        help="record into this one file instead (0600; never over an existing file): what `rigctl capture` does",
    )
    p.add_argument("--duration", type=float, metavar="S", help="stop by itself after this many seconds")
    p.add_argument("--max-requests", type=int, metavar="N", help="stop by itself once N requests are recorded")
    p.add_argument("--status", action="store_true", help="what the rig's front door sees now: in flight, held, by client")
    common.add_json_flag(p)
    p.set_defaults(handler=run)


def say(text: str) -> None:
    print(f"rigctl {_who[0]}: {text}", file=sys.stderr, flush=True)


_who = ["gateway"]  # the command the owner typed: `rigctl capture` is this door, and says so as itself


def run(args: argparse.Namespace, who: str = "gateway") -> int:
    _who[0] = who
    from rigctl import paths
    from rigctl.config import load_settings
    from rigctl.gateway.bounds import ConnectionBounds
    from rigctl.gateway.control import ControlError
    from rigctl.gateway.door_file import door_file, write_door_file
    from rigctl.gateway.hold import HoldBounds
    from rigctl.gateway.run import DoorPlan
    from rigctl.gateway.run import run as run_door
    from rigctl.gateway.upstream import split_upstream
    from rigctl.listen import is_loopback, parse_listen, shown
    from rigctl.serve.front_door import served_url

    if args.status:
        return _status(args)
    settings = load_settings()
    from rigctl.rules import Count, Seconds

    common.check_flags(args, {"grace": Seconds(), "duration": Seconds(positive=True), "max_requests": Count("requests", 1)})
    if args.max_requests is not None and not (args.record or args.out or settings.gateway_record):
        raise BadInputError("--max-requests counts recorded requests: give --record or --out too")
    if os.environ.get("LISTEN_PID") == str(os.getpid()) and not args.listen:
        host, port = "127.0.0.1", 0  # systemd passes the listening socket (rigctl-gateway.socket): its address rules
    elif args.listen:
        host, port = parse_listen(args.listen, "--listen", any_port=bool(args.to))
    elif settings.gateway_listen:
        host, port = parse_listen(settings.gateway_listen, f"{settings.sources.get('gateway_listen', 'config')}: gateway.listen")
    else:
        host, port = "127.0.0.1", _profile_port(settings)
    remote = not is_loopback(host)
    if remote and not args.allow_remote:
        raise BadInputError(
            f"refusing to open the rig to {host}: the front door listens on loopback unless --allow-remote says "
            "otherwise (and then an API key is required)"
        )
    api_key = _api_key(args.api_key_file) if (remote or args.api_key_file or args.allow_remote) else None
    if remote and api_key is None:
        raise BadInputError(f"--allow-remote needs the key the apps must send: --api-key-file FILE (mode 0600) or ${API_KEY_ENV}")
    if args.to:
        try:
            (to_host, to_port), _ = split_upstream(args.to)
        except ValueError as exc:
            raise BadInputError(f"--to: give the server's base URL, e.g. http://127.0.0.1:8000 ({exc})") from None
        if to_port == port and (to_host == host or (is_loopback(to_host) and is_loopback(host)) or host in ("0.0.0.0", "::")):
            raise BadInputError(f"--to points at the front door itself ({shown(host, port)}): it would forward to itself")
        url: str = args.to

        def fixed() -> str | None:
            return url

        resolve, control = fixed, None
        behind = without_userinfo(url)
    else:
        resolve, control = served_url(), paths.gateway_socket()
        behind = "the vLLM rigctl serves (its internal port, from the server record)"
    plan = DoorPlan(
        host=host,
        port=port,
        resolve=resolve,
        bounds=HoldBounds(
            seconds=settings.gateway_hold_s,
            requests=settings.gateway_hold_requests,
            bytes=max(1, settings.gateway_hold_mb) * 1024 * 1024,
        ),
        api_key=api_key,
        control=control,
        grace_s=args.grace,
        wait_for_port=control is not None,
        silent_s=settings.gateway_silent_s,
        connections=ConnectionBounds(
            header_s=settings.gateway_header_s,
            keepalive_s=settings.gateway_keepalive_s,
            body_s=settings.gateway_body_s,
            max_connections=settings.gateway_max_connections,
        ),
        allow_remote=bool(args.allow_remote),
        recording=_recording(settings, without_userinfo(resolve() or "") or "the rig's vLLM", args.out)
        if (args.record or args.out or settings.gateway_record)
        else None,
        stop_after_s=args.duration,
        stop_after_kept=args.max_requests,
    )

    def ready(bound_host: str, bound: int, activated: bool) -> None:
        say(f"the apps' address: http://{shown(bound_host, bound)} -> {behind}")
        if activated and port and (bound_host, bound) != (host, port):
            say(f"listening on the socket systemd passed ({shown(bound_host, bound)}), not {shown(host, port)}")
        if plan.recording is not None:
            where = plan.recording.path if args.out else plan.recording.folder
            say(f"recording every forwarded generation request into {where} (0600: it holds the apps' prompts)")
        if control is not None:  # the rig's door: its record, for status and for `rigctl watch` to restart it
            try:
                write_door_file(
                    shown(bound_host, bound),
                    sys.argv[1:],
                    systemd=activated or run_by_systemd(),
                    key_from_env=api_key is not None and args.api_key_file is None,
                )
            except OSError as exc:
                say(f"its record {door_file()} could not be written ({exc.strerror or exc}): `rigctl watch` cannot restart it")
        if not is_loopback(bound_host):
            say(f"listening beyond loopback ({host}): every request must carry the API key")

    try:
        cut = run_door(plan, say, ready)
    except ControlError as exc:
        raise RigctlError(str(exc)) from None
    except OSError as exc:
        raise RigctlError(f"cannot listen on {shown(host, port)}: {exc.strerror or exc}") from None
    recording = plan.recording
    kept = f"; {recording.kept} request(s) recorded into {recording.path or recording.folder}" if recording is not None else ""
    say("stopped" + (f": {cut} answer(s) still running were cut" if cut else "") + kept)
    if recording is not None and recording.stopped:
        say(f"the recording stopped early: {recording.stopped}")
        return 1 if args.out else 0  # a trace asked for by name is incomplete: a script must know
    return 0


def run_by_systemd() -> bool:
    """Whether systemd runs this process as a service's main process (it then restarts it, by its
    unit's Restart=): its parent is systemd, and the service's invocation id is set. A process run
    under a service (a CI runner's tests) inherits the id, never the parent."""
    import psutil

    if not os.environ.get("INVOCATION_ID"):
        return False
    try:
        return psutil.Process(os.getppid()).name() == "systemd"
    except psutil.Error:
        return False


def _status(args: argparse.Namespace) -> int:
    from rigctl.gateway.control import ControlError, find

    door = find()
    if door is None:
        raise RigctlError("no front door runs on this rig (start one: rigctl gateway)")
    try:
        status = door.status()
    except ControlError as exc:
        raise RigctlError(str(exc)) from None
    finally:
        door.close()
    if args.json:
        common.print_json(status)
        return 0
    counts = status.get("counts") if isinstance(status.get("counts"), dict) else {}
    print(f"front door (pid {status.get('pid')}) on {status.get('listen')} -> {status.get('upstream') or 'nothing serves'}")
    print(f"in flight {status.get('in_flight')}, held {status.get('held')}" + (" (holding)" if status.get("holding") else ""))
    print("since it opened: " + ", ".join(f"{v} {k}" for k, v in (counts or {}).items()))
    clients = status.get("clients")
    if isinstance(clients, dict) and clients:
        print("by client: " + ", ".join(f"{k} {v}" for k, v in sorted(clients.items(), key=lambda kv: -int(kv[1]))))
    reuse = status.get("reuse")
    if isinstance(reuse, dict):
        for client, seen in sorted(reuse.items()):
            if isinstance(seen, dict) and seen.get("prompt_chars"):
                share = 100 * seen.get("reused_chars", 0) / seen["prompt_chars"]
                print(
                    f"prefix reuse of {client}: {share:.0f}% of its prompts' characters repeat its earlier prompts "
                    f"({seen.get('requests')} request(s))"
                )
    recording = status.get("recording")
    if isinstance(recording, dict):
        stopped = recording.get("stopped")
        print(
            f"recording: {recording.get('kept')} request(s) kept"
            + (f"; stopped: {stopped}" if stopped else f" (now {recording.get('file')})")
        )
    return 0


def _recording(settings: Settings, upstream: str, only: Path | None) -> Recording:
    from rigctl.gateway.recording import RecordBounds, Recording, recordings_dir

    folder = recordings_dir()
    bounds = RecordBounds(
        max_bytes=max(1, settings.gateway_record_mb) * 1024 * 1024,
        max_age_s=max(60.0, settings.gateway_record_hours * 3600),
        keep_bytes=max(1, settings.gateway_keep_mb) * 1024 * 1024,
    )
    try:
        return Recording(folder, upstream, bounds, say, only=only)
    except OSError as exc:
        raise RigctlError(f"{folder}: cannot record there ({exc.strerror or exc})") from None


def _profile_port(settings: object) -> int:
    """The port of the profile that serves, else the last good one: where the apps point now."""
    from rigctl.jsonio import DamagedFile
    from rigctl.profiles.schema import ProfileError
    from rigctl.profiles.store import ProfileStore
    from rigctl.profiles.vllm_args import DEFAULT_PORT
    from rigctl.state.statefiles import read_state

    try:
        state = read_state()
    except DamagedFile:
        state = None
    name = (state.profile or state.last_good) if state else None
    if not name:
        raise RigctlError("no profile has served here yet, so the apps' port is unknown: give --listen 127.0.0.1:PORT")
    try:
        profile = ProfileStore().load(name)
    except ProfileError as exc:
        raise RigctlError(f"the apps' port comes from profile {name}, which cannot be read ({exc}): give --listen") from None
    port = profile.vllm.get("port", DEFAULT_PORT)
    return int(port) if isinstance(port, int) and not isinstance(port, bool) else DEFAULT_PORT


def _api_key(path: Path | None) -> str | None:
    """The key from a file only its owner reads, or the environment; never argv (ps shows argv)."""
    if path is None:
        return os.environ.get(API_KEY_ENV) or None
    try:
        st = path.stat()
        text = path.read_text().strip()
    except OSError as exc:
        raise BadInputError(f"{path}: {exc.strerror or exc}") from None
    if st.st_mode & 0o077:
        raise BadInputError(f"{path}: readable by others (mode {st.st_mode & 0o777:o}); chmod 600 it")
    if not text:
        raise BadInputError(f"{path}: empty")
    return text
