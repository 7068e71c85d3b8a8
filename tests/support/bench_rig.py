"""A fault-matrix rig with bench plans: profiles seqs2 and seqs8 on its port, plans in its config dir."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.faults.rig import Rig

# The gate is wide (25%): these arms run on 2 shared cores beside the rest of the suite, where
# two identical real-time simulator runs can differ by 15%. The effects below are 40% or more.
SEQS_PLAN = """description = "max_num_seqs 2 -> 8 at 8 concurrent short requests"
control = "{control}"
candidate = "{candidate}"
order = "ABA"
[workload]
kind = "chat-short"
concurrency = 8
requests = 32
prompt_tokens = 256
max_tokens = 64
warmup_requests = 4
[gate]
metric = "{metric}"
min_change = 0.25
[[gate.guard]]
metric = "ttft_p95_s"
max_regression = 0.5
"""


class BenchRig(Rig):
    def __init__(self, home: Path) -> None:
        super().__init__(home)
        self.env["RIGCTL_SIM_SPEED"] = "2"  # ~700 chunks/s in all: the client never starves on 2 shared cores
        self.plans = self.config_dir / "plans"
        self.plans.mkdir(parents=True, exist_ok=True)
        self.add_profile("seqs2", "max_num_seqs = 2\n")
        self.add_profile("seqs8", "max_num_seqs = 8\n")

    def plan(
        self, name: str, control: str = "seqs2", candidate: str = "seqs8", metric: str = "output_tok_per_s", text: str | None = None
    ) -> Path:
        path = self.plans / f"{name}.toml"
        path.write_text(text or SEQS_PLAN.format(control=control, candidate=candidate, metric=metric))
        return path

    def bench(self, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
        done = self.rigctl("bench", *args, "--json", timeout=240, env=env)
        return done, json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
