"""One vocabulary of severity for everything rigctl says: a profile's diagnostics, the fit's
findings, the rig's warnings and the alerts. Textual's notify calls the first "information"."""

from __future__ import annotations

from typing import Literal

Severity = Literal["info", "warning", "error"]
NotifySeverity = Literal["information", "warning", "error"]


def for_notify(severity: Severity) -> NotifySeverity:
    return "information" if severity == "info" else severity
