"""A `vllm serve` command line read as vLLM reads it (rigctl/vllm/argv.py), by fit: short forms,
`=` forms, flags without a value before the model, negatives, `-O3`, unknown flags kept."""

from __future__ import annotations

import pytest

from rigctl.vllm.argv import read_serve_argv
from rigctl.vllm.flags import flags_from_argv
from rigctl.vllm.options import load_option_table

MTP = '{"method": "mtp", "num_speculative_tokens": 3}'


@pytest.mark.parametrize(
    ("argv", "model", "tp", "dp", "eager", "prefix", "spec"),
    [
        (["vllm", "serve", "M", "-tp", "2"], "M", 2, 1, False, True, 0),
        (["vllm", "serve", "--enforce-eager", "M"], "M", 1, 1, True, True, 0),
        (["vllm", "serve", "M", "--tensor-parallel-size=2", "-dp", "2"], "M", 2, 2, False, True, 0),
        (["vllm", "serve", "--no-enable-prefix-caching", "M", "-sc", MTP], "M", 1, 1, False, False, 3),
        (["vllm", "serve", "M", "--disable-prefix-caching", "--enforce-eager", "-tp=2"], "M", 2, 1, True, False, 0),
        (["/opt/venv/bin/vllm", "serve", "--model", "N", "--data-parallel-size", "2"], "N", 1, 2, False, True, 0),
    ],
)
def test_fit_reads_a_serve_line_as_vllm_does(
    argv: list[str], model: str, tp: int, dp: int, eager: bool, prefix: bool, spec: int
) -> None:
    flags = flags_from_argv(argv)
    assert (
        flags.model,
        flags.tensor_parallel_size,
        flags.data_parallel_size,
        flags.enforce_eager,
        flags.prefix_caching,
        flags.mtp_tokens,
    ) == (
        model,
        tp,
        dp,
        eager,
        prefix,
        spec,
    )


def test_the_optimization_level_shorthand_and_unknown_flags() -> None:
    read = read_serve_argv(["vllm", "serve", "M", "-O3", "--a-flag-of-0-40", "x", "--max-model-len", "32k"], load_option_table())
    assert read.model == "M" and read.flags["--optimization-level"] == "3"
    assert read.unknown == ("--a-flag-of-0-40",) and read.flags["--a-flag-of-0-40"] == "x"
    assert read.flags["--max-model-len"] == "32k"
