"""Fault 12: vLLM's log stamps have no year. The reader died on 29 February (strptime in a
non-leap year) and counted a boot across New Year as negative; through fault 2, a switch on
such a day died mid-boot."""

from __future__ import annotations

import json

import pytest

from rigctl.vllm.bootlog import read_bootlog
from tests.faults.rig import Rig


@pytest.mark.parametrize(
    "start",
    ["2028-02-28 23:59:59", "2028-02-29 23:59:59", "2027-12-31 23:59:59"],
    ids=["into-leap-day", "out-of-leap-day", "new-year"],
)
def test_a_switch_on_an_awkward_day(rig: Rig, start: str) -> None:
    rig.add_profile("good", f'[env]\nRIGCTL_SIM_TIME_SCALE = "0.05"\nRIGCTL_SIM_CLOCK_START = "{start}"\n')
    switched = rig.rigctl("switch", "good")
    assert switched.returncode == 0, switched.stdout + switched.stderr
    log = rig.record()["log_path"]
    days = [line.split()[3] for line in open(log) if line.startswith("(") and " INFO " in line]
    assert days[0] == start[5:10] and days[-1] != days[0]  # the boot log crosses midnight
    read = rig.rigctl("bootlog", log, "--json")
    report = json.loads(read.stdout)
    seconds = [p["seconds"] for p in report["phases"]]
    assert seconds == sorted(seconds) and seconds[0] == 0 and 1 <= seconds[-1] < 30
    assert json.loads(rig.rigctl("history", "--json").stdout)[-1]["boot_seconds"] > 1


def test_the_reader_counts_across_a_leap_day_and_new_year() -> None:
    lines = [
        "(APIServer pid=1) INFO 12-31 23:59:50 [api_server.py:1] vLLM API server version 0.33.0",
        "(APIServer pid=1) INFO 01-01 00:00:05 [x.py:1] non-default args: {}",
        "(EngineCore pid=2) INFO 02-28 23:59:59 [x.py:1] Initializing a V1 LLM engine (v0.33.0)",
        "(EngineCore pid=2) INFO 02-29 00:00:09 [x.py:1] Loading weights took 3.1 seconds",
    ]
    report = read_bootlog(lines[:2])
    assert [p.seconds for p in report.phases] == [0.0, 15.0]
    leap = read_bootlog(lines[2:])
    assert [p.seconds for p in leap.phases] == [0.0, 10.0]
