"""Helpers the tests share: real servers, fake drivers, the simulated rig's parts."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def present(value: T | None, what: str = "a value") -> T:
    """`value`, asserted there (a state file, a boot's failure): the test fails naming what is missing."""
    assert value is not None, f"no {what}"
    return value
