"""The dry run's cost for every pair of shipped profiles on the rigs they are made for: each served
in turn on the simulated rig, every other costed against it, nothing touched."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rigctl.profiles.schema import ProfileError
from rigctl.serve import switch as transaction
from rigctl.serve.cost import switch_cost
from rigctl.state.statefiles import read_record

SHIPPED = sorted(
    p.stem
    for p in (Path(__file__).resolve().parents[2] / "rigctl" / "profiles" / "examples").glob("*.toml")
    if p.stem != "qwen36-27b-base"
)


@pytest.mark.parametrize("rig", ["2x3090-nvlink", "2x4090-pcie"])
def test_every_shipped_pair_has_a_cost_and_nothing_is_touched(
    rig: str, isolated_dirs: Path, port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rigctl.cli.context import make_context

    monkeypatch.setenv("RIGCTL_SIM", rig)
    monkeypatch.setenv("RIGCTL_SIM_TIME_SCALE", "0.002")
    user = isolated_dirs / "config" / "rigctl" / "profiles"
    user.mkdir(parents=True)
    for name in SHIPPED:  # each on the test's port, under its own name
        (user / f"{name}.toml").write_text(f'extends = "{name}"\n[vllm]\nport = {port}\n')
    ctx = make_context(argparse.Namespace(sim=rig))
    costed = 0
    try:
        for active in SHIPPED:
            try:
                outcome = transaction.switch(ctx, active, rollback=False)
            except ProfileError:
                continue  # not made for this rig (a 1x3090 profile's layout, say)
            if outcome.status != "switched":
                continue
            pid = read_record().pid  # type: ignore[union-attr]
            for target in SHIPPED:
                if target == active:
                    continue
                try:
                    cost = switch_cost(ctx, target)
                except ProfileError:
                    continue
                costed += 1
                assert cost.target == target and cost.active_profile == active
                assert cost.active_pool_tokens is not None and cost.active_pool_tokens > 0
                assert cost.predicted_pool_tokens is not None or cost.refusal, (active, target, cost)
                assert cost.pool_change().startswith("KV pool ") and cost.running_requests == 0
                assert cost.changes, (active, target)  # two different profiles: something differs
                assert read_record().pid == pid  # type: ignore[union-attr]  # touched nothing
    finally:
        transaction.stop(ctx)
    assert costed >= 12
