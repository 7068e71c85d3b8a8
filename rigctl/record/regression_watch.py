"""Did the switch to the boot being recorded collapse the prefix hit rate? Asked of the record
as rows are written (at most once a minute: the answer reads a week of two boots' rows), said
once per boot."""

from __future__ import annotations

import time

from rigctl.config import Settings
from rigctl.errors import RigctlError
from rigctl.record.derive import Regression, current_regression, thresholds_of
from rigctl.record.prefix_fault import explain
from rigctl.record.reader import RecordReader
from rigctl.record.rows import Row
from rigctl.state.statefiles import ServerRecord

CHECK_EVERY_S = 60.0
LOOK_BACK_S = 7 * 86400


class RegressionWatch:
    def __init__(self, settings: Settings) -> None:
        self.thresholds = thresholds_of(settings)
        self._judged: set[str] = set()
        self._checked = -CHECK_EVERY_S

    def after(self, row: Row) -> Regression | None:
        """The regression `row`'s boot shows, the first time it shows one."""
        if row.boot in self._judged or time.monotonic() - self._checked < CHECK_EVERY_S:
            return None
        self._checked = time.monotonic()
        try:
            rows = RecordReader().switch_rows(row.boot, LOOK_BACK_S)
        except RigctlError:
            return None
        found = current_regression(rows, row.boot, self.thresholds)
        if found is not None:
            self._judged.add(row.boot)
            found = explain(found)  # the alert says whose fault, where the door's recording can tell
        return found


def hit_rate_fall(record: ServerRecord, settings: Settings) -> Regression | None:
    """The switch to what serves now collapsed the hit rate, by the serving record (status, the
    exporter: one rule)."""
    from rigctl.record.recorder import boot_key

    try:
        rows = RecordReader().switch_rows(boot_key(record))
    except RigctlError:
        return None
    found = current_regression(rows, boot_key(record), thresholds_of(settings)) if rows else None
    return explain(found) if found is not None else None
