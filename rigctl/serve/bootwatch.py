"""Following one boot until it is really ready, or has failed and we know why.

Ready means HTTP: /health answers 200 and /v1/models lists a served name. The log is
followed meanwhile for the phases (shown as they tick) and for the line that explains a
failure. A process that exits, an error line followed by silence, or the timeout ends it.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from rigctl.engine.client import EngineClient
from rigctl.redact import redact_text
from rigctl.serve.context import Event
from rigctl.serve.launchers import Launcher
from rigctl.serve.verify import Verification
from rigctl.state import discover
from rigctl.state.statefiles import ServerRecord
from rigctl.vllm.bootlog import BootLogReader, BootReport, Failure

ERROR_GRACE = 10.0  # seconds a process may keep running after logging a fatal error


@dataclass(frozen=True)
class BootResult:
    profile: str
    ok: bool
    seconds: float
    report: BootReport
    failure: Failure | None
    record: ServerRecord | None  # None: nothing was started
    version: str | None = None
    verification: Verification | None = None  # what the owner's apps need, checked once ready


def not_started(profile: str, failure: Failure) -> BootResult:
    return BootResult(profile, False, 0.0, BootReport(), failure, None)


def _exited(code: int, report: BootReport) -> Failure:
    last = report.tail[-1] if report.tail else ""
    if code < 0 or code in (128 + signal.SIGKILL, 128 + signal.SIGTERM):
        number = -code if code < 0 else code - 128
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else f"signal {number}"
        return Failure(
            "killed",
            f"vLLM was killed by {name} before it was ready, and not by rigctl",
            last,
            "the OOM killer, another rigctl or a service manager: see `dmesg | tail`",
        )
    return Failure("exited", f"vLLM exited with status {code} before it was ready", last, "read the log: rigctl logs")


def watch_boot(
    launcher: Launcher,
    record: ServerRecord,
    timeout: float,
    on_event: Callable[[Event], None],
    poll: float = 0.1,
    clock: Callable[[], float] = time.monotonic,
    cancel: threading.Event | None = None,
) -> BootResult:
    follower = launcher.follower(record)
    reader = BootLogReader(started=record.started)  # phases count the silent imports before vLLM's first line
    start = clock()
    next_probe = start
    error_at: float | None = None
    client = EngineClient(record.base_url, launcher.api_key(record), timeout=1.0)

    def drain() -> None:
        for line in follower.read_new():
            phase = reader.feed(line)
            on_event(Event("line", redact_text(line), record.profile))
            if phase:
                on_event(Event("phase", phase.label, record.profile, clock() - start))

    def result(ok: bool, failure: Failure | None, version: str | None = None) -> BootResult:
        return BootResult(record.profile, ok, clock() - start, reader.report, failure, record, version)

    try:
        while True:
            drain()
            report = reader.report
            code = launcher.exit_code(record)
            if code is not None:
                time.sleep(0.05)
                drain()
                return result(False, report.failure or _exited(code, report))
            if cancel is not None and cancel.is_set():
                return result(
                    False,
                    Failure("interrupted", "interrupted by Ctrl-C before it was ready", "", "switch again when you are ready"),
                )
            if report.failure is not None:
                error_at = error_at or clock()
                if clock() - error_at > ERROR_GRACE:
                    return result(False, report.failure)
            now = clock()
            if now >= next_probe:
                next_probe = now + 0.25
                probe = client.probe()
                if probe.unauthorized:
                    return result(
                        False,
                        Failure(
                            "unauthorized",
                            "the server is up but refuses rigctl's requests (HTTP 401): it wants an API key rigctl was not given",
                            "",
                            "set vllm.api_key in the profile (one key goes to vLLM as "
                            "VLLM_API_KEY), or unset VLLM_API_KEY in rigctl's environment",
                        ),
                    )
                if probe.healthy and any(name in probe.models for name in record.served_names):
                    if launcher.serves_port(record) is False:  # someone else's server answers there
                        holder = discover.holder(record.port) or "another process"
                        return result(
                            False,
                            Failure(
                                "port_in_use",
                                f"port {record.port} is answered by another server ({holder}), not the one rigctl started",
                                "",
                                "stop what listens there or change port",
                            ),
                        )
                    drain()
                    return result(True, None, client.version())
            if now - start > timeout:
                last_phase = report.phases[-1].label if report.phases else "no phase reached"
                return result(
                    False,
                    Failure(
                        "timeout",
                        f"not ready after {timeout:.0f} s (last phase: {last_phase})",
                        report.tail[-1] if report.tail else "",
                        "raise the boot timeout ([rigctl] boot_timeout in the profile, or --timeout) or read the log: rigctl logs",
                    ),
                )
            time.sleep(poll)
    finally:
        client.close()
        follower.close()
