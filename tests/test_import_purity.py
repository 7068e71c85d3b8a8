"""The core and the headless commands never import Textual (checked in a fresh process)."""

from __future__ import annotations

import subprocess
import sys

import pytest

CORE_MODULES = ["rigctl.gpu.backend", "rigctl.gpu.nvml", "rigctl.gpu.simulated", "rigctl.gpu.sampler",
                "rigctl.gpu.topology", "rigctl.gpu.warnings", "rigctl.gpu.report", "rigctl.fmt", "rigctl.cli"]

HEADLESS = [["status", "--sim", "2x3090-nvlink", "--json"], ["topo", "--sim", "2x4090-pcie"],
            ["gpus", "--sim", "1x3090"], ["sims"]]


def loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    return set(out.stdout.split())


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_imports_no_textual(module: str) -> None:
    assert loaded_after(f"import {module}") == set()


@pytest.mark.parametrize("argv", HEADLESS, ids=lambda a: a[0])
def test_headless_commands_import_no_textual(argv: list[str]) -> None:
    code = ("import contextlib, io\nfrom rigctl.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    assert main({argv!r}) == 0")
    assert loaded_after(code) == set()
