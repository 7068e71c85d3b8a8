"""The simulator against the owners' published tables (../shared/reference/owners/MEASURED.md), by
bench plans through the real CLI on the simulated rig they were measured on: the direction always,
the ratio within 25%.

The 2x RTX 4090 table (27B W4A16, 256-token answers), TP2 over DP2, in total tok/s and in each
request's speed:

    concurrent   DP2   TP2   TP2 / DP2   per request: DP2   TP2   TP2 / DP2
    1             30   110   3.67                       30    113   3.77
    8            214   422   1.97                       27     57   2.11
    32           294   654   2.22                       14     25   1.79

(On the simulator, measured on the 2-core VM: totals x3.60, x1.92 and x1.87; the DP2 replica's
per-request speed 29.7, 25.2, 11.9 tok/s against the owner's 30, 27, 14. At 32 the owner's DP2
total, 294, is below what their own per-request speed says (32 x 14 = 448; the simulator's 382 to
427): the owner's table does not say why, so at 32 the total is held in direction only, and the
per-request ratio, which their row does agree with, within 25%. The total there sat at the 25%
edge (x1.65 to x1.87 with the machine's load), which is no test of the simulator.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.bench_rig import BenchRig


def plan_text(description: str, control: str, candidate: str, metric: str = "output_tok_per_s", **workload: object) -> str:
    """A bench plan: the candidate between two controls, the gate 5% on `metric`, the workload's keys."""
    keys = "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in workload.items())
    return (
        f'description = "{description}"\ncontrol = "{control}"\ncandidate = "{candidate}"\norder = "ABA"\n'
        f'[workload]\n{keys}[gate]\nmetric = "{metric}"\nmin_change = 0.05\n'
    )


def role_mean(data: dict[str, Any], role: str, key: str) -> float:
    """A figure of a bench's arms in one role (control or candidate), averaged over those arms."""
    values = [float(arm[key]) for arm in data["arms"] if arm["role"] == role]
    return sum(values) / len(values)


TABLE_4090 = {1: 110 / 30, 8: 422 / 214, 32: 654 / 294}  # totals
PER_REQUEST_4090 = {1: 113 / 30, 8: 57 / 27, 32: 25 / 14}
TOTAL_UNEXPLAINED = {32}  # the owner's DP2 total disagrees with their per-request speed (docstring)


@pytest.fixture
def rig_4090(tmp_path: Path) -> Iterator[BenchRig]:
    rig = BenchRig(tmp_path / "home")
    rig.env["RIGCTL_SIM"] = "2x4090-pcie"
    rig.add_profile("dp2", "max_num_seqs = 32\n", parent="qwen36-27b-4090-dp2")
    rig.add_profile("tp2", "max_num_seqs = 32\n", parent="qwen36-27b-4090-tp2-mtp")
    yield rig
    rig.cleanup()


@pytest.mark.slow
@pytest.mark.parametrize("concurrent", sorted(TABLE_4090))
def test_the_4090_owners_split_beats_replicas_by_their_ratio(rig_4090: BenchRig, concurrent: int) -> None:
    text = plan_text(
        f"DP2 vs TP2 on 2x4090, {concurrent} concurrent",
        "dp2",
        "tp2",
        kind="chat-short",
        concurrency=concurrent,
        requests=max(4, 2 * concurrent),
        prompt_tokens=256,
        max_tokens=256,
        warmup_requests=min(concurrent, 8),
    )
    plan = rig_4090.plan(f"dp2-tp2-{concurrent}", text=text)
    done, data = rig_4090.bench(str(plan))
    assert data.get("control_mean") and data.get("candidate_mean"), done.stdout + done.stderr
    # every request of every arm answered: a burst the simulator drops is no measurement (seed 000)
    assert [arm["failed"] for arm in data["arms"]] == [0] * len(data["arms"]), [arm["errors"][:2] for arm in data["arms"]]
    ratio = data["candidate_mean"] / data["control_mean"]
    owner = TABLE_4090[concurrent]
    assert ratio > 1, (
        f"TP2 {data['candidate_mean']:.0f} tok/s is not above DP2 {data['control_mean']:.0f} (the owner: x{owner:.2f})"
    )
    if concurrent not in TOTAL_UNEXPLAINED:
        assert abs(ratio / owner - 1) <= 0.25, f"TP2 / DP2 at {concurrent} concurrent: x{ratio:.2f}, the owner x{owner:.2f}"
    # a request's speed is 1 / TPOT
    per_request = role_mean(data, "control", "tpot_p50_s") / role_mean(data, "candidate", "tpot_p50_s")
    owner_per_request = PER_REQUEST_4090[concurrent]
    assert abs(per_request / owner_per_request - 1) <= 0.25, (
        f"TP2 / DP2 per request at {concurrent} concurrent: x{per_request:.2f}, the owner measured x{owner_per_request:.2f}"
    )


ASYNC_PLAN = plan_text(
    "async scheduling at 6 concurrent short requests (the 3090 owner's gate)",
    "qwen36-27b-awq-tp2",
    "qwen36-27b-awq-tp2-async",
    kind="chat-short",
    concurrency=6,
    requests=72,  # longer arms: a burst of the machine's other work moves one arm's median TTFT less (48: x1.24 once in 5)
    prompt_tokens=2048,
    max_tokens=256,
    warmup_requests=6,
)


@pytest.mark.slow
@pytest.mark.timeout(300)  # three arms of 72 requests and their boots, beside the rest of the slow suite
def test_the_3090_owners_async_scheduling_gain(tmp_path: Path) -> None:
    """The 3090 owner at six concurrent short requests: 166.8 -> 210.1 tok/s (x1.26) and median
    TTFT 1.55 -> 1.16 s (x0.75); the simulator's within 25% of both, from one run. Their "short"
    is short beside their 30-60k agent prompts: a 1.55 s TTFT on two 3090s is a few thousand
    tokens' prefill, here 2,048 (at 512 the TTFT is one or two of the simulator's 20 ms steps,
    which no speed-up can shorten; at 4,096 two prompts in flight fill a step's chunk, a step
    bound by the GPU, which async scheduling does not shorten either)."""
    rig = BenchRig(tmp_path / "home")
    try:
        done, data = rig.bench(str(rig.plan("async", text=ASYNC_PLAN)))
        assert data.get("control_mean") and data.get("candidate_mean"), done.stdout + done.stderr
        gain = data["candidate_mean"] / data["control_mean"]
        assert abs(gain / (210.1 / 166.8) - 1) <= 0.25, f"async x{gain:.2f} tok/s, the owner x1.26"
        fall = role_mean(data, "candidate", "ttft_p50_s") / role_mean(data, "control", "ttft_p50_s")
        assert fall < 1, f"async moved the median TTFT x{fall:.2f}: the owner's fell x0.75"
        assert abs(fall / (1.16 / 1.55) - 1) <= 0.25, f"async median TTFT x{fall:.2f}, the owner x0.75"
    finally:
        rig.cleanup()


SEQS_PLAN = plan_text(
    "max_num_seqs 4 -> 8 at 8 concurrent short requests (the 3090 owner's gate)",
    "seqs4",
    "seqs8",
    kind="chat-short",
    concurrency=8,
    requests=48,
    max_tokens=256,
    warmup_requests=8,
)
MTP_PLAN = plan_text(
    "MTP depth 1 at max_num_seqs 1 (the 3090 owner's loss)",
    "one",
    "one-mtp",
    kind="decode-heavy",
    concurrency=1,
    requests=4,
    max_tokens=512,
    warmup_requests=1,
)


BUILD_PLAN = plan_text(
    "the build, one stream (the 3090 owner's quantization table)",
    "awq",
    "other",
    kind="decode-heavy",
    concurrency=1,
    requests=4,
    max_tokens=512,
    warmup_requests=1,
)
AWQ, FP8, W4A8 = "qwen36-27b-awq-tp2", "qwen36-27b-fp8-tp2", "qwen36-27b-autoround-tp2"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("plan", "profiles", "owner"),
    [
        (SEQS_PLAN, {"seqs4": (AWQ, "max_num_seqs = 4\n"), "seqs8": (AWQ, "max_num_seqs = 8\n")}, 352.8 / 208.1),
        (
            MTP_PLAN,
            {
                "one": (AWQ, "max_num_seqs = 1\n"),
                "one-mtp": (AWQ, 'max_num_seqs = 1\nspeculative_config = { method = "mtp", num_speculative_tokens = 1 }\n'),
            },
            51.53 / 67.64,
        ),
        (BUILD_PLAN, {"awq": (AWQ, ""), "other": (FP8, "")}, 43.24 / 60.90),
        (BUILD_PLAN, {"awq": (AWQ, ""), "other": (W4A8, "")}, 58.56 / 60.90),
    ],
    ids=["max-num-seqs-4-to-8", "mtp-depth-1", "fp8-against-awq", "w4a8-against-awq"],
)
def test_the_3090_owners_gates(tmp_path: Path, plan: str, profiles: dict[str, tuple[str, str]], owner: float) -> None:
    """On the 2x3090 NVLink rig (TP2): max_num_seqs 4 -> 8 at 8 concurrent, 208.1 -> 352.8 tok/s;
    MTP at depth 1 and max_num_seqs 1, 67.64 -> 51.53 tok/s; one stream's decode of FP8 and
    AutoRound W4A8 against AWQ W4A16, 43.24 and 58.56 against 60.90 tok/s. The direction, and the
    ratio within 25%."""
    rig = BenchRig(tmp_path / "home")
    try:
        for name, (parent, body) in profiles.items():
            rig.add_profile(name, body, parent=parent)
        done, data = rig.bench(str(rig.plan("gate", text=plan)))
        assert data.get("control_mean") and data.get("candidate_mean"), done.stdout + done.stderr
        ratio = data["candidate_mean"] / data["control_mean"]
        assert (ratio > 1) == (owner > 1), f"x{ratio:.2f}, the owner x{owner:.2f}"
        assert abs(ratio / owner - 1) <= 0.25, f"x{ratio:.2f}, the owner x{owner:.2f}"
    finally:
        rig.cleanup()


ONE_TWO_PLAN = plan_text(
    "one 3090 against two (TP2, NVLink), long agent turns (the 3090 owner's row)",
    "one",
    "two",
    metric="ttft_mean_s",
    kind="agent-long",
    concurrency=1,
    requests=4,
    prompt_tokens=32768,
    shared_prefix_tokens=28672,
    max_tokens=256,
    warmup_requests=1,
)


@pytest.mark.slow
def test_the_3090_owners_one_card_against_two(tmp_path: Path) -> None:
    """The 3090 owner's one-vs-two table, their agent workloads on the same settings: TP2 over
    NVLink against one card, TTFT mean 4.564 -> 3.808 s (x0.83, within 25%); TPOT 38 -> 36 ms and
    the KV pool 200,826 -> 313,367 tokens in direction only: the pool of their TP2 row is half of
    what their quantization table's AWQ TP2 holds (610,212), so that row's memory settings are not
    the ones published, and their TPOT at ~150k resident tokens gained x0.95 where one stream at
    short context decodes twice as fast split (listed in docs/guide/bench.md)."""
    rig = BenchRig(tmp_path / "home")
    try:
        rig.add_profile("one", "", parent="qwen36-27b-1x3090")
        rig.add_profile("two", "max_num_seqs = 2\nmax_model_len = 180000\n", parent="qwen36-27b-awq-tp2")
        done, data = rig.bench(str(rig.plan("one-two", text=ONE_TWO_PLAN)))
        assert data.get("control_mean") and data.get("candidate_mean"), done.stdout + done.stderr
        ttft = data["candidate_mean"] / data["control_mean"]
        assert abs(ttft / (3.808 / 4.564) - 1) <= 0.25, f"TTFT mean two / one x{ttft:.2f}, the owner x0.83"
        arms = {arm["role"]: arm for arm in data["arms"]}  # the last of each role
        assert arms["candidate"]["tpot_mean_s"] < arms["control"]["tpot_mean_s"], arms
        assert arms["candidate"]["kv_pool_tokens"] > arms["control"]["kv_pool_tokens"], arms
    finally:
        rig.cleanup()


PREFILL_PLAN = plan_text(
    "the build, one long prompt (the 3090 owner's quantization table, TTFT)",
    "awq",
    "other",
    metric="ttft_mean_s",
    kind="prefill-heavy",
    concurrency=1,
    requests=3,
    prompt_tokens=32768,
    max_tokens=8,
    warmup_requests=1,
)


@pytest.mark.slow
@pytest.mark.parametrize(("build", "owner"), [(W4A8, 58.64 / 81.56), (FP8, 80.20 / 81.56)], ids=["w4a8", "fp8"])
def test_the_3090_owners_prefill_by_build(tmp_path: Path, build: str, owner: float) -> None:
    """The TTFT column of the 3090 owner's quantization table (one 120k prompt, TP2): AutoRound
    W4A8 58.64 s and FP8 80.20 s against AWQ W4A16's 81.56 s. Within 25% each, and W4A8's
    direction; FP8's 1.7% is below what one run of theirs can tell apart, so its direction is not
    held (the simulator's prompts are 32k: the ratio is the prefill rate's, whatever the length)."""
    rig = BenchRig(tmp_path / "home")
    try:
        rig.add_profile("awq", "", parent=AWQ)
        rig.add_profile("other", "", parent=build)
        done, data = rig.bench(str(rig.plan("prefill", text=PREFILL_PLAN)))
        assert data.get("control_mean") and data.get("candidate_mean"), done.stdout + done.stderr
        ratio = data["candidate_mean"] / data["control_mean"]
        if build == W4A8:
            assert ratio < 1, f"W4A8's TTFT x{ratio:.2f} of AWQ's, the owner x{owner:.2f}"
        assert abs(ratio / owner - 1) <= 0.25, f"TTFT x{ratio:.2f} of AWQ's, the owner x{owner:.2f}"
    finally:
        rig.cleanup()


@pytest.mark.slow
def test_the_3090_owners_mtp_at_depth_4_is_slower_at_their_acceptance(tmp_path: Path) -> None:
    """The 3090 owner: MTP "slower both times", at depth 4 with 43.7% of the drafted tokens
    accepted. The simulator's depth 4: slower than no MTP, its acceptance within 25% of theirs."""
    rig = BenchRig(tmp_path / "home")
    try:
        rig.add_profile("one", "max_num_seqs = 1\n", parent=AWQ)
        rig.add_profile(
            "one-mtp", 'max_num_seqs = 1\nspeculative_config = { method = "mtp", num_speculative_tokens = 4 }\n', parent=AWQ
        )
        done, data = rig.bench(str(rig.plan("mtp4", text=MTP_PLAN)))
        assert data.get("control_mean") and data.get("candidate_mean"), done.stdout + done.stderr
        assert data["candidate_mean"] < data["control_mean"], f"depth 4: x{data['candidate_mean'] / data['control_mean']:.2f}"
        [acceptance] = [arm["spec_acceptance_rate"] for arm in data["arms"] if arm["role"] == "candidate"]
        assert abs(acceptance / 0.437 - 1) <= 0.25, f"acceptance {acceptance:.1%} at depth 4, the owner's 43.7%"
    finally:
        rig.cleanup()
