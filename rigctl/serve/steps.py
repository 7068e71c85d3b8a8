"""The steps a switch is made of: load a profile, stop a server, boot a profile, record it.

`ServeContext` carries everything a step needs, so the CLI, the TUI and the tests drive
the same code with their own launcher, rig and event sink. `boot()` never raises for
what can go wrong while starting vLLM (a missing executable, a failing systemctl, a full
disk): it returns a failed BootResult, so the transaction can roll back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rigctl import paths
from rigctl.engine.client import EngineClient
from rigctl.fit.check import CheckedProfile, check_profile, model_max_len
from rigctl.profiles.schema import Profile, ProfileError
from rigctl.profiles.settings import ResolvedSettings
from rigctl.profiles.vllm_args import LaunchSpec
from rigctl.serve import front_door
from rigctl.serve.bootwatch import BootResult, not_started, watch_boot
from rigctl.serve.context import ServeContext
from rigctl.serve.launchers import Launcher
from rigctl.serve.verify import not_verified, run_verify
from rigctl.serve.verify_spec import VerifySpec, spec_for
from rigctl.state import boots
from rigctl.state.statefiles import ServerRecord, clear_record, write_record
from rigctl.vllm.bootfailure import capped
from rigctl.vllm.bootlog import BootReport, Failure
from rigctl.vllm.options import OptionTable

ROLLBACK_MARGIN = 1.5  # a rollback may take this many times its last recorded boot


@dataclass(frozen=True)
class Prepared:
    """A profile ready to start: checked once (its settings, launch and prediction), and what the
    owner's apps need of its boot."""

    checked: CheckedProfile
    spec: LaunchSpec  # checked.launch, there: a prepared profile has no error
    verify: VerifySpec  # what the owner's apps need of its boot
    warnings: tuple[str, ...] = ()  # what prepare() said: lints, the fit, a version note

    @property
    def profile(self) -> Profile:
        return self.checked.profile

    @property
    def table(self) -> OptionTable:
        """The option table of the vLLM it was checked and rendered against."""
        return self.checked.table

    @property
    def settings(self) -> ResolvedSettings:
        return self.checked.settings


def prepare(ctx: ServeContext, name: str) -> Prepared:
    """Load, validate against the options of the vLLM its command runs (and the rig), render;
    ProfileError touches nothing."""
    profile = ctx.store.load(name)
    choice = ctx.tables.choose(profile)
    said = [choice.note] if choice.note else []
    if choice.note:
        ctx.say("warning", choice.note, profile.name)
    checked = check_profile(
        profile, choice.table, ctx.rig, ctx.tables.default_command, host_paths=ctx.settings.launcher != "docker"
    )
    if checked.errors or checked.launch is None:
        raise ProfileError(checked.errors)
    for warning in checked.diagnostics:
        ctx.say("warning", warning.text(kind=False), profile.name)  # the event is the warning: said once
    said += [d.text(kind=False) for d in checked.diagnostics]
    return Prepared(checked, checked.launch, spec_for(ctx.settings, profile), tuple(said))


BOOTING_GRACE = 5.0  # s: vLLM ignores SIGTERM until it is ready; waiting the full grace for it helps nobody


def stop_server(ctx: ServeContext, record: ServerRecord, launcher: Launcher, grace: float | None = None) -> None:
    """Stop and forget a server; StopFailed (record kept, so a later stop can retry) if it stays."""
    grace = ctx.settings.stop_grace if grace is None else grace
    if grace > BOOTING_GRACE and not _answers(record):
        grace = BOOTING_GRACE
        ctx.say(
            "step",
            f"{record.profile} is still booting, and vLLM ignores SIGTERM until it is ready: SIGKILL after {grace:.0f} s",
            record.profile,
        )
    ctx.say("step", f"stopping {record.profile} (grace {grace:.0f} s)", record.profile)
    launcher.stop(record, grace)
    try:
        clear_record()
    except OSError as exc:  # a read-only state dir: the record of a dead server is only stale
        ctx.say("warning", f"the server record could not be removed ({_reason(exc)})", record.profile)
    _wait_vram_released(ctx, record)


def _answers(record: ServerRecord) -> bool:
    with EngineClient(record.base_url, timeout=0.5) as client:
        return client.probe().healthy


def _wait_vram_released(ctx: ServeContext, record: ServerRecord, limit: float = 15.0) -> None:
    """The driver frees memory a moment after the process is gone; the next boot needs it."""
    if ctx.sampler is None or record.pid is None:
        return
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            pids = {p.pid for s in ctx.sampler.snapshot().samples for p in s.processes or ()}
        except Exception:  # noqa: BLE001 - a sampling fault must not stop a switch; the boot will tell
            return
        if record.pid not in pids:
            return
        time.sleep(0.1)


@contextlib.contextmanager
def no_interrupt() -> Iterator[None]:
    """Hold Ctrl-C back while a server is started and recorded: a KeyboardInterrupt between
    the two would leave a server that nothing knows about (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def boot(
    ctx: ServeContext, profile: Profile, spec: LaunchSpec, timeout: float, verify: VerifySpec | None, verify_decides: bool = True
) -> BootResult:
    """Start `profile` and follow it until ready, then verify what the owner's apps need
    (`verify` None: --no-verify, said in the boot record); any failure, a failed verification
    included, comes back as a failed result, with what was started stopped again.
    `verify_decides` False (a rollback: what served before is better than nothing): a failed
    verification is a warning, and the server stays."""
    ctx.say("step", f"starting {profile.name}", profile.name)
    spec, door = front_door.behind_door(spec)
    ctx.say("command", spec.display(), profile.name)
    with no_interrupt():
        try:
            record = dataclasses.replace(ctx.launcher.start(spec, profile.name), front_door=door)
        except Exception as exc:  # noqa: BLE001 - a deleted venv, systemctl or docker failing, an unwritable log
            return not_started(
                profile.name,
                Failure(
                    "launch",
                    f"vLLM could not be started: {_reason(exc)}",
                    "",
                    "check [server] vllm_command and the launcher settings (rigctl config)",
                ),
            )
        try:
            write_record(record)  # before watching: a killed rigctl still leaves the server adoptable
        except OSError as exc:
            _stop_quietly(ctx, record)  # unrecorded, it would hold the port and the GPUs unseen
            return not_started(
                profile.name,
                Failure("state", f"the server record could not be written ({_reason(exc)}), so the server was stopped again", ""),
            )
    try:
        result = watch_boot(ctx.launcher, record, timeout, ctx.on_event, cancel=ctx.interrupt.requested)
    except Exception as exc:  # noqa: BLE001 - the watcher itself failed: the boot is stopped and said
        _stop_quietly(ctx, record)
        return BootResult(
            profile.name, False, 0.0, BootReport(), Failure("internal", f"following the boot failed: {_reason(exc)}", ""), record
        )
    if result.ok:
        checked = _verified(ctx, profile, spec, result, verify)
        if checked.ok or verify_decides:
            result = checked
        else:
            ctx.say(
                "warning", f"{profile.name} serves again, but {checked.failure.summary if checked.failure else ''}", profile.name
            )
            result = dataclasses.replace(result, verification=checked.verification)
    if result.ok:
        _record_boot(ctx, profile, spec, result)
    else:
        _stop_quietly(ctx, record)
        full = _disk_full(record)
        if full is not None:
            result = dataclasses.replace(result, failure=full)
        elif result.failure is not None and result.failure.cause == "max_model_len":
            result = dataclasses.replace(result, failure=capped(result.failure, model_max_len(profile.model)))
    return result


def _verified(ctx: ServeContext, profile: Profile, spec: LaunchSpec, result: BootResult, verify: VerifySpec | None) -> BootResult:
    """The ready server checked for what the apps need; a failed check fails the boot."""
    record = result.record
    if verify is None or record is None:
        return dataclasses.replace(result, verification=not_verified("--no-verify"))
    wanted = verify.describe()
    if not wanted:
        return dataclasses.replace(result, verification=not_verified("[verify] asks for nothing"))
    ctx.say("phase", f"verifying: {'; '.join(wanted)}", profile.name)
    with EngineClient(record.base_url, ctx.launcher.api_key(record), timeout=2.0) as client:
        max_len = client.probe().max_model_len
    name = spec.served_names[0] if spec.served_names else profile.model or profile.name
    verification = run_verify(record.base_url, ctx.launcher.api_key(record), name, verify, max_len)
    ctx.say("phase", verification.summary(), profile.name)
    failed = verification.failure
    if failed is None:
        return dataclasses.replace(result, verification=verification)
    return dataclasses.replace(
        result,
        ok=False,
        verification=verification,
        failure=Failure(
            "verify",
            failed.detail,
            "",
            "the apps in front of this rig need it ([verify] in config.toml or the profile); --no-verify switches without checking",
        ),
    )


def _disk_full(record: ServerRecord) -> Failure | None:
    """A boot that died while its log's disk was full died of that, whatever it managed to say."""
    if not record.log_path:
        return None
    directory = Path(record.log_path).parent
    free = paths.free_bytes(directory)
    if free is None or free >= paths.MIN_FREE_BYTES:
        return None
    return Failure(
        "disk_full",
        f"the disk holding {directory} is full ({free // 1024:,} KiB free): the server's log could not be written",
        "",
        f"free space on that filesystem (old boot logs are in {directory})",
    )


def _record_boot(ctx: ServeContext, profile: Profile, spec: LaunchSpec, result: BootResult) -> None:
    report = result.report
    try:
        boots.append(
            boots.BootRecord(
                profile=profile.name,
                profile_hash=boots.profile_hash(profile),
                when=time.time(),
                argv=spec.redacted_argv(),
                vllm_version=result.version or report.version,
                rig=ctx.rig.backend if ctx.rig else None,
                kv_tokens=report.pool_tokens,
                max_concurrency=report.max_concurrency,
                max_model_len=report.concurrency_len,
                available_kv_gib=report.available_kv_gib,
                model_load_gib=report.model_load_gib,
                model_load_seconds=report.model_load_seconds,
                graph_capture_seconds=report.graph_capture_seconds,
                boot_seconds=round(result.seconds, 2),
                verification=result.verification.to_json() if result.verification else None,
            )
        )
    except OSError as exc:  # the server serves; only the record of the boot is lost
        ctx.say("warning", f"the boot record was not written to {boots.boots_file()}: {_reason(exc)}", profile.name)


def _stop_quietly(ctx: ServeContext, record: ServerRecord) -> None:
    """Nothing half-started stays behind; a stop that fails is said, and the record stays."""
    try:
        ctx.launcher.stop(record, min(ctx.settings.stop_grace, BOOTING_GRACE))  # never ready: SIGTERM is ignored
    except Exception as exc:  # noqa: BLE001 - a stop that fails is said, never raised mid-rollback
        ctx.say(
            "warning",
            f"the failed server for {record.profile} could not be stopped: {_reason(exc)}; it stays recorded (rigctl stop retries)",
            record.profile,
        )
        return
    try:
        clear_record()
    except OSError:
        pass


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename + ': ' if exc.filename else ''}{exc.strerror}"
    return str(exc) or type(exc).__name__


def boot_timeout(ctx: ServeContext, profile: Profile, override: float | None) -> float:
    if override is not None:
        return override
    value = profile.rigctl.get("boot_timeout")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else ctx.settings.boot_timeout


def rollback_timeout(ctx: ServeContext, profile: Profile) -> float:
    """The last good profile's own budget, never the one given for trying the new profile:
    its configured boot timeout, or its slowest recorded boot with a margin if that is longer."""
    configured = boot_timeout(ctx, profile, None)
    try:
        seconds = [r.boot_seconds for r in boots.read_all() if r.profile == profile.name]
    except Exception:  # noqa: BLE001 - an unreadable history only loses the margin
        seconds = []
    return max([configured] + [s * ROLLBACK_MARGIN + 10 for s in seconds])
