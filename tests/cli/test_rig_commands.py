"""The rig subcommands, as a script or cron job runs them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rigctl.cli import main


def rigctl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rigctl", *args], capture_output=True, text=True, timeout=60, env=env)


def test_topo_shows_nv4_on_the_nvlink_rig() -> None:
    result = rigctl("topo", "--sim", "2x3090-nvlink")
    assert result.returncode == 0, result.stderr
    first_rows = result.stdout.splitlines()[1:3]
    assert first_rows[0].split()[:3] == ["GPU0", "X", "NV4"]
    assert first_rows[1].split()[:3] == ["GPU1", "NV4", "X"]
    assert "Link 3: 14.062 GB/s, NVLink 3.1, to GPU1" in result.stdout


def test_topo_shows_pcie_path_and_refused_p2p_on_the_4090_rig() -> None:
    result = rigctl("topo", "--sim", "2x4090-pcie")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].split()[:3] == ["GPU0", "X", "PHB"]
    read_block = result.stdout.split("P2P read (r)")[1].splitlines()
    assert read_block[1].split() == ["GPU0", "X", "GNS"]
    assert "lacks GPU P2P capability" in result.stdout


def test_status_json_describes_both_cards() -> None:
    result = rigctl("status", "--json", "--sim", "2x3090-nvlink")
    assert result.returncode == 0, result.stderr
    rig = json.loads(result.stdout)["rig"]
    assert rig["backend"] == "sim:2x3090-nvlink"
    assert [g["name"] for g in rig["gpus"]] == ["NVIDIA GeForce RTX 3090"] * 2
    for gpu in rig["gpus"]:
        assert gpu["memory_total"] == 24576 * 1024 * 1024
        assert gpu["sample"]["power_w"] > 0 and gpu["sample"]["temperature_c"] > 0
        assert len(gpu["nvlinks"]) == 4
    assert rig["topology"]["matrix"]["GPU0"]["GPU1"] == "NV4"
    assert rig["topology"]["vllm_fully_connected_nvlink"] is True


def test_sim_from_environment() -> None:
    import os

    result = rigctl("status", "--json", env={**os.environ, "RIGCTL_SIM": "1x3090"})
    assert result.returncode == 0
    assert len(json.loads(result.stdout)["rig"]["gpus"]) == 1


def test_status_without_a_driver_points_to_sim() -> None:
    try:
        import pynvml

        pynvml.nvmlInit()
        pytest.skip("this machine has an NVIDIA driver")
    except pynvml.NVMLError:
        pass  # no driver: the case under test
    result = rigctl("status")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--sim" in lines[0]
    assert result.stdout == ""


def test_unknown_sim_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--sim", "9x9090"]) == 2
    assert "available: 1x3090" in capsys.readouterr().err


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "--frobnicate"]) == 2
    assert main(["gpus", "--sim", "1x3090", "--interval", "0"]) == 2


def test_gpus_watch_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "--sim", "2x3090-nvlink", "--watch", "--json", "--count", "3", "--interval", "0.01"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3
    assert all(len(json.loads(line)["gpus"]) == 2 for line in lines)


def test_gpus_table_has_a_row_per_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sim", "2x4090-pcie", "gpus"]) == 0  # --sim before the subcommand works too
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["GPU", "VRAM", "util"]
    assert [line.split()[0] for line in out[1:]] == ["0", "1"]


def test_sims_lists_the_rigs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sims", "--json"]) == 0
    names = {r["name"] for r in json.loads(capsys.readouterr().out)}
    assert {"2x3090-nvlink", "2x4090-pcie", "1x3090", "2x3090-gen3-x8"} <= names
