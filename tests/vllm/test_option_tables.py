"""The bundled option table is what tools/build_vllm_options.py makes of the reference extraction
of vLLM's real parser: regenerating it changes nothing, so a new vLLM is one run of the tool."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT.parent / "shared" / "reference" / "vllm"


@pytest.mark.skipif(
    not (REFERENCE / "vllm_serve_options_0.33.0.json").exists(),
    reason=f"the reference extraction of vLLM's parser is not at {REFERENCE}",
)
def test_the_tool_rebuilds_the_bundled_033_table_byte_for_byte(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_vllm_options.py"), str(REFERENCE), "0.33.0", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    built = (tmp_path / "vllm_options_0.33.0.json").read_bytes()
    assert built == (ROOT / "rigctl" / "vllm" / "data" / "vllm_options_0.33.0.json").read_bytes()
