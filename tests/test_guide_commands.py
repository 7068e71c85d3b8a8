"""The guide never drifts from the program: every shell block of the README and docs/guide/
marked ```sh runnable runs as written, on the simulated rig, and exits 0; a page's blocks run in
page order in one home, as a newcomer follows them (one block's profile is the next one's)."""

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


def runnable_pages() -> list[tuple[str, list[str]]]:
    """Each page with runnable blocks, its blocks in page order."""
    pages = [(str(page.relative_to(ROOT)), BLOCK.findall(page.read_text())) for page in PAGES]
    return [(name, blocks) for name, blocks in pages if blocks]


def test_the_guide_has_runnable_blocks() -> None:
    assert any(where.startswith("docs/guide/your-rig.md") for where, _ in runnable_blocks())


@pytest.mark.parametrize(("page", "blocks"), runnable_pages(), ids=[name for name, _ in runnable_pages()])
def test_a_pages_runnable_blocks_run_as_written_in_page_order(page: str, blocks: list[str], tmp_path: Path) -> None:
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
    try:
        for n, block in enumerate(blocks, 1):
            script = tmp_path / f"block{n}.sh"
            script.write_text("set -euo pipefail\n" + block)
            done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
            assert done.returncode == 0, f"{page}#{n}:\n{block}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    finally:  # nothing a block started outlives the page
        subprocess.run([sys.executable, "-m", "rigctl", "stop"], env=env, capture_output=True, timeout=120)
