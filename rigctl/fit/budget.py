"""The KV budget of one worker (one rank of one replica): what vLLM leaves for KV after it
profiles its start-up, predicted.

    requested = total x gpu_memory_utilization          (vLLM checks it is free at start)
    available = requested - weights/TP - MTP head/TP - activation peak - non-torch - CUDA graphs

The weights are the checkpoint's bytes when it is on disk. The activation peak (a profiled
dummy forward of max_num_batched_tokens), the non-torch memory (NCCL buffers with TP, the DP
coordinator) and the CUDA-graph estimate vLLM deducts since 0.21 are modelled as the constants
below, fitted to the published deployments in tests/fit/test_budget.py; where the rig has boot
records, calibrate.py learns a correction from what the engine reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigctl.units import GIB

BIG_GPU = 70 * GIB  # vLLM picks larger scheduler defaults on cards at least this big
DEFAULT_GMU = 0.92  # vLLM's default gpu_memory_utilization, 0.20.1 to 0.33.0

# Fitted constants (GiB); see the module docstring.
ACTIVATION_BASE = 0.1
ACTIVATION_PER_1K_TOKENS = 0.2
ACTIVATION_SPLIT = 0.7  # with TP the profiled peak per rank is smaller
EAGER_ACTIVATION = 2.5  # no torch.compile fusion: the profiled peak keeps every intermediate
NON_TORCH = 0.2
NON_TORCH_TP = 2.8  # NCCL buffers and the custom all-reduce workspace
NON_TORCH_DP = 1.6
GRAPHS = 0.3
GRAPHS_MTP = 0.3
SAFETY = 150 / 1024


def default_max_num_seqs(gpu_total: int) -> int:
    return 1024 if gpu_total >= BIG_GPU else 256


def default_batched_tokens(gpu_total: int) -> int:
    return 8192 if gpu_total >= BIG_GPU else 2048


@dataclass(frozen=True)
class WorkerBudget:
    total: int  # one GPU's memory
    requested: float  # total x gpu_memory_utilization
    weights: float  # per rank
    mtp_head: float
    activation: float
    non_torch: float
    graphs: float
    correction: float  # GiB added from the rig's boot records (0 without them)

    @property
    def available(self) -> float:
        return (self.requested - self.weights - self.mtp_head - self.activation - self.non_torch - self.graphs
                - SAFETY * GIB + self.correction * GIB)

    @property
    def loads(self) -> bool:
        """The weights (and MTP head) fit in what vLLM may take of the card."""
        return self.weights + self.mtp_head < self.requested


def worker_budget(total: int, weights_total: float, mtp_total: float, tp: int, dp: int, *,
                  utilization: float = DEFAULT_GMU, batched_tokens: int | None = None, eager: bool = False,
                  mtp: bool = False, correction_gib: float = 0.0) -> WorkerBudget:
    chunk = batched_tokens or default_batched_tokens(total)
    activation = (ACTIVATION_BASE + ACTIVATION_PER_1K_TOKENS * chunk / 1024) * (1.0 if tp == 1 else ACTIVATION_SPLIT)
    if eager:
        activation *= EAGER_ACTIVATION
    non_torch = NON_TORCH + (NON_TORCH_TP if tp > 1 else 0.0) + (NON_TORCH_DP if dp > 1 else 0.0)
    graphs = 0.0 if eager else GRAPHS + (GRAPHS_MTP if mtp else 0.0)
    return WorkerBudget(total, total * utilization, weights_total / tp, (mtp_total / tp) if mtp else 0.0,
                        activation * GIB, non_torch * GIB, graphs * GIB, correction_gib)
