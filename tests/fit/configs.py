"""Where the tests' model configs are: rigctl's shipped copies (rigctl/vllm/configs), else the
test fixtures (tests/fixtures/fit: models rigctl does not ship)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SHIPPED = ROOT / "rigctl" / "vllm" / "configs"
FIXTURES = ROOT / "tests" / "fixtures" / "fit"


def config(name: str) -> Path:
    shipped = SHIPPED / f"{name}.json"
    return shipped if shipped.is_file() else FIXTURES / f"{name}.config.json"
