"""The owner's own quality check (`[quality] command` in a plan): run after each arm's measured
requests, against that arm's server, its base URL and model in the environment (RIGCTL_BASE_URL,
RIGCTL_MODEL, RIGCTL_PROFILE, and OPENAI_BASE_URL / OPENAI_API_KEY for OpenAI clients). Its last line of output is
the arm's score (the owners' "Quality 109/120"). A command that fails, times out or prints nothing
is that arm's failure, said in one line. rigctl runs no model-quality suite of its own.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rigctl.bench.plan import Quality

OUTPUT_LIMIT = 1 << 20
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class QualityResult:
    score: str  # the command's last line of output, as it printed it
    value: float | None  # its first number (109 of "109/120"), for the table's column
    error: str  # why it failed ("": it did not)
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: Any) -> QualityResult | None:
        if not isinstance(data, dict):
            return None
        value = data.get("value")
        return QualityResult(
            str(data.get("score", "")),
            float(value) if isinstance(value, (int, float)) else None,
            str(data.get("error", "")),
            float(data.get("seconds") or 0.0),
        )


def run_quality(quality: Quality, base_url: str, model: str, api_key: str | None, cwd: Path, profile: str = "") -> QualityResult:
    """The command as an argv list (never a shell), bounded by its timeout."""
    env = {
        **os.environ,
        "RIGCTL_BASE_URL": base_url,
        "RIGCTL_MODEL": model,
        "RIGCTL_PROFILE": profile,
        "OPENAI_BASE_URL": f"{base_url}/v1",
        "OPENAI_API_KEY": api_key or "EMPTY",
    }
    started = time.monotonic()
    try:
        done = subprocess.run(
            list(quality.command), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=quality.timeout_s
        )
    except subprocess.TimeoutExpired:
        return QualityResult("", None, f"the quality command ran past its {quality.timeout_s:g} s", quality.timeout_s)
    except OSError as exc:
        return QualityResult("", None, f"the quality command could not start: {exc.strerror or exc}", 0.0)
    seconds = round(time.monotonic() - started, 2)
    lines = [line.strip() for line in done.stdout[-OUTPUT_LIMIT:].decode(errors="replace").splitlines() if line.strip()]
    if done.returncode != 0:
        said = (done.stderr[-OUTPUT_LIMIT:].decode(errors="replace").strip().splitlines() or lines or [""])[-1][:200]
        return QualityResult(
            lines[-1][:200] if lines else "",
            None,
            f"the quality command exited {done.returncode}" + (f": {said}" if said else ""),
            seconds,
        )
    if not lines:
        return QualityResult("", None, "the quality command printed no score (its last line is the score)", seconds)
    score = lines[-1][:200]
    number = _NUMBER.search(score)
    return QualityResult(score, float(number.group()) if number else None, "", seconds)
