"""The guide never drifts from the program: every shell block of the README and docs/guide/
marked ```sh runnable runs as written, on the simulated rig, in a fresh home, and exits 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.serving import free_port

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
BLOCK = re.compile(r"^```sh runnable\n(.*?)^```", re.S | re.M)


def runnable_blocks() -> list[tuple[str, str]]:
    return [
        (f"{page.relative_to(ROOT)}#{n}", block) for page in PAGES for n, block in enumerate(BLOCK.findall(page.read_text()), 1)
    ]


def test_the_guide_has_runnable_blocks() -> None:
    assert any(where.startswith("docs/guide/your-rig.md") for where, _ in runnable_blocks())


@pytest.mark.parametrize(("where", "block"), runnable_blocks(), ids=[w for w, _ in runnable_blocks()])
def test_a_runnable_block_runs_as_written(where: str, block: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIGCTL_")}
    env.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "RIGCTL_SIM": "2x3090-nvlink",
            "RIGCTL_SIM_TIME_SCALE": "0.002",
            "PORT": str(free_port()),  # a block that serves takes it: 8000 may be another test's
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",  # the rigctl installed here
        }
    )
    script = tmp_path / "block.sh"
    script.write_text("set -euo pipefail\n" + block)
    try:
        done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    finally:  # nothing a block started outlives it
        subprocess.run([sys.executable, "-m", "rigctl", "stop"], env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, f"{where}:\n{block}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
