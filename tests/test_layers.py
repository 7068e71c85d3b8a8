"""The simulator's reach into the rest of rigctl, as docs/DESIGN.md allows it (the other layer
rules are import-linter contracts in pyproject.toml, run by `lint-imports` in CI)."""

from __future__ import annotations

import grimp

SIM_MAY_IMPORT = {
    "rigctl.gpu.model",  # what a GPU and a sample are
    "rigctl.gpu.nvml_codes",  # the board facts NVML reports
    "rigctl.vllm.options",  # vLLM's option tables: the simulator parses flags as vLLM does
    "rigctl.vllm.flags",  # the one vocabulary of vLLM's flags, read by the one reader
    "rigctl.vllm.memory",
    "rigctl.vllm.model",
    "rigctl.vllm.weights",  # vLLM's memory, the one fit predicts with
    "rigctl.vllm.kvpool",  # vLLM's KV bytes a token (the offload tier sizes its blocks so)
    "rigctl.vllm.metric_names",  # vLLM's metric names and histogram buckets
    "rigctl.paths",
    "rigctl.errors",
    "rigctl.atomic",
    "rigctl.proc",
    "rigctl.files",  # its own files opened as rigctl opens its own (never through a link)
    "rigctl.units",  # MiB and GiB
    "rigctl.engine.http_post",  # the demo load's POST, the verification's own (no httpx in the core)
}


def test_the_simulator_imports_only_what_a_simulator_needs() -> None:
    graph = grimp.build_graph("rigctl")
    reached = {
        imported
        for module in graph.find_descendants("rigctl.sim") | {"rigctl.sim"}
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith("rigctl.") and not imported.startswith("rigctl.sim")
    }
    assert reached <= SIM_MAY_IMPORT, sorted(reached - SIM_MAY_IMPORT)
    assert {"rigctl.vllm.options", "rigctl.vllm.memory", "rigctl.vllm.flags"} <= reached  # the list is read, not stale


def test_the_cli_layer_says_its_types() -> None:
    """The CLI is thin over typed core functions: a JSON answer is `object`, a row a TypedDict,
    never `Any`, which would let a wrong shape through mypy to the owner's scripts."""
    import ast
    from pathlib import Path

    import rigctl.cli

    found = []
    for path in sorted(Path(rigctl.cli.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Name) and node.id == "Any") or (isinstance(node, ast.Attribute) and node.attr == "Any"):
                found.append(f"{path.name}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and any(alias.name == "Any" for alias in node.names):
                found.append(f"{path.name}:{node.lineno}")
    assert not found, found
    assert len(list(Path(rigctl.cli.__file__).parent.rglob("*.py"))) > 10  # the walk saw the layer
