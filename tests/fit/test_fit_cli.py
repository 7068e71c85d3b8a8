"""`rigctl fit` as a user runs it: a real subprocess on a simulated rig, the model's config in a
Hugging Face cache laid out as huggingface_hub lays it out, boot records in the real history
file, and the validate/switch integration (refused before anything stops)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from rigctl.fit.check import check
from rigctl.vllm.flags import flags_from_argv
from rigctl.vllm.weights import from_checkpoint
from tests.faults.rig import Rig
from tests.fit.configs import config

AWQ = "Qwen/Qwen3.6-27B-AWQ"


def cache_model(hub: Path, model: str, name: str = "qwen3.6-27b") -> Path:
    snapshot = hub / f"models--{model.replace('/', '--')}" / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True, exist_ok=True)
    (snapshot / "config.json").write_text(config(name).read_text())
    return snapshot


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "hub"
    for model in (AWQ, "Qwen/Qwen3.6-27B-FP8"):
        cache_model(path, model)
    monkeypatch.setenv("HF_HUB_CACHE", str(path))
    return path


def fit(*args: str, sim: str | None = "2x4090-pcie") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "rigctl", "fit", *args] + (["--sim", sim] if sim else [])
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def write_boot(
    home: Path, profile: str, argv: list[str], kv_tokens: int, available_kv_gib: float, max_concurrency: float = 9.0
) -> None:
    """One boot record of `profile` on the simulated 2x4090 in the real history file, as a switch
    writes it."""
    record = {"profile": profile, "profile_hash": "x", "when": 1_790_000_000.0, "argv": argv, "vllm_version": "0.33.0",
              "rig": "sim:2x4090-pcie", "kv_tokens": kv_tokens, "max_concurrency": max_concurrency,
              "max_model_len": 32768, "available_kv_gib": available_kv_gib, "model_load_gib": 8.1,
              "model_load_seconds": 40.0, "graph_capture_seconds": 10.0, "boot_seconds": 120.0}  # fmt: skip
    state = home / "home" / "state" / "rigctl"
    state.mkdir(parents=True, exist_ok=True)
    (state / "history.jsonl").write_text(json.dumps(record) + "\n")


def test_a_profile_on_two_4090s_is_advised_to_split_with_every_layout_predicted(hub: Path) -> None:
    done = fit("qwen36-27b-4090-tp2-mtp", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["predicted"] is True and out["profile_layout"] == {"tp": 2, "dp": 1}
    assert [(lay["tp"], lay["dp"]) for lay in out["layouts"]] == [(1, 1), (1, 2), (2, 1)]
    for layout in out["layouts"]:
        assert layout["predicted"] is True and isinstance(layout["fits"], bool)
        assert {"pool_tokens", "max_concurrency", "block_size", "available_kv_gib", "mamba_blocks"} <= set(layout)
        assert layout["block_size"] == 1600 and layout["mamba_blocks"] >= 1  # hybrid: the GDN state's blocks
    assert out["recommended"]["tp"] == 2 and out["recommended"]["dp"] == 1
    assert out["recommended"]["why"].startswith("the weights take 16.9 of 24.0 GiB (70% of one GPU): split")
    assert out["weights"]["source"].startswith("estimate (26.9B parameters, int4)")
    split = out["layouts"][2]
    assert 300_000 < split["pool_tokens"] < 400_000  # the owners measured 350,518

    text = fit("qwen36-27b-4090-tp2-mtp")
    assert text.returncode == 0, text.stderr
    assert "all figures PREDICTED" in text.stdout and "TP2/DP1 *" in text.stdout
    assert "recommended: TP2/DP1: the weights take" in text.stdout
    assert "every sequence pins 15 blocks (398 MiB per GPU)" in text.stdout
    assert "17 layer groups (17 attention, 48 GDN)" in text.stdout and split["state_page_padding"] > 0
    # the MTP head's bytes and where they come from: the draft shares the target's embedding and LM head
    assert "MTP head: 0.79 GiB resident, its decoder layer(s) and 2h->h projection, unquantised" in text.stdout, text.stdout
    assert "its own embedding and LM head (4.74 GiB over the TP ranks), then takes the target's" in text.stdout
    assert "load peak per GPU (TP2/DP1): 8.04 weights + 0.40 MTP head + 2.37 draft's own" in text.stdout


def test_the_4090_owners_mtp_does_not_load_on_a_24_gb_replica(hub: Path) -> None:
    """The 4090 owner: MTP "does not fit" a DP replica on 24 GB ("its embedding and output layers
    alone need close to 4 GB"); the owners' TP2+MTP pool says the resident head is 0.79 GiB. Both:
    vLLM loads the draft whole (its own vocab x hidden embedding and LM head, 2 x 248,320 x 5,120 x
    bf16 = 4.74 GiB) beside the target's weights, then gives it the target's. The replica's peak at
    load is held against the card; the pool pays the resident head only."""
    out = json.loads(fit("qwen36-27b-4090-tp2-mtp", "--json").stdout)
    single, replica, split = out["layouts"]
    own = 2 * 248_320 * 5_120 * 2 / 2**30
    assert replica["fits"] is False and replica["why_not"].startswith("runs out of memory loading: 16.08 weights")
    assert "vLLM loads the draft whole before it gives it the target's embedding and LM head" in replica["why_not"]
    peak = replica["load_peak_gib"]
    assert peak["draft_embedding_and_lm_head"] == pytest.approx(own, abs=0.01) and peak["mtp_head"] == 0.79
    parts = ("weights_per_rank", "mtp_head", "draft_embedding_and_lm_head", "non_torch", "cuda_context")
    assert peak["peak"] == pytest.approx(sum(peak[k] for k in parts), abs=0.02)
    assert peak["margin"] == pytest.approx(peak["gpu_total"] - peak["peak"], abs=0.01) and peak["margin"] < 0.15
    assert replica["budget_gib"]["mtp_head"] == 0.79 and replica["pool_tokens"] > 0  # the pool it loaded for, said
    # split, each rank holds half of everything, the draft's own layers included
    assert split["fits"] is True and split["load_peak_gib"]["draft_embedding_and_lm_head"] == pytest.approx(own / 2, abs=0.01)
    assert split["load_peak_gib"]["margin"] > 9 and split["budget_gib"]["mtp_head"] == 0.40
    # one card alone has no DP coordinator's memory: it loads, and the margin is said
    assert single["fits"] is True and 1.0 < single["load_peak_gib"]["margin"] < 2.5
    text = fit("qwen36-27b-4090-tp2-mtp").stdout
    assert "TP1/DP2    NO" in text and "TP1/DP2: runs out of memory loading:" in text
    assert "(replicas would not fit)" in text  # the rule's reason no longer weighs a replica that cannot load
    # without MTP the replica loads (the owner's DP2 ran, MTP off)
    plain = json.loads(fit("qwen36-27b-4090-tp2-mtp", "--num-speculative-tokens", "0", "--json").stdout)["layouts"][1]
    assert plain["fits"] is True and plain["load_peak_gib"]["draft_embedding_and_lm_head"] == 0


def test_tp_and_dp_given_give_that_layout_alone_and_solve_max_len_prints_the_tiers(hub: Path) -> None:
    out = json.loads(fit("qwen36-27b-4090-tp2-mtp", "--tp", "1", "--dp", "2", "--json").stdout)
    assert [(lay["tp"], lay["dp"]) for lay in out["layouts"]] == [(1, 2)] and out["recommended"] is None
    tiers = fit("qwen36-27b-4090-tp2-mtp", "--solve-max-len")
    assert tiers.returncode == 0 and tiers.stdout.startswith("TP2/DP1 (predicted): 1 at once: max_model_len ")
    four = json.loads(fit("qwen36-27b-4090-tp2-mtp", "--tp", "4", "--json").stdout)["layouts"][0]
    assert four["fits"] is False and four["why_not"] == "needs 4 GPUs; this rig has 2"


def test_a_logged_budget_gives_the_engines_pool_exactly() -> None:
    done = fit(
        "--config",
        str(config("qwen3.6-27b")),
        "--tp",
        "2",
        "--max-model-len",
        "131072",
        "--kv-cache-dtype",
        "fp8_e4m3",
        "--max-num-seqs",
        "8",
        "--available-kv-gib",
        "4.99",
        "--json",
        sim="2x3090-nvlink",
    )
    assert done.returncode == 0, done.stderr
    layout = json.loads(done.stdout)["layouts"][0]
    assert (layout["pool_tokens"], layout["block_size"], layout["num_blocks"], layout["fits"]) == (302_921, 1568, 208, True)


def test_without_a_driver_the_kv_step_still_answers_when_the_budget_is_given() -> None:
    args = ("--config", str(config("tiny-qwen2")), "--max-model-len", "2048")
    done = fit(*args, "--available-kv-gib", "1", "--json", sim=None)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["layouts"][0]["pool_tokens"] == 1_048_576
    refused = fit(*args, sim=None)
    assert refused.returncode == 1 and "--available-kv-gib" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        (("--tp", "0"), "rigctl: --tp: must be a whole number of GPUs of at least 1, not 0"),
        (
            ("--model", "Nobody/Nothing"),
            ("rigctl: no config.json for Nobody/Nothing: it is not a local dir and not in the Hugging Face cache"),
        ),
        (("--config", "/nonexistent/config.json"), "rigctl: /nonexistent/config.json: no such model config"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    done = fit(*args)
    assert done.returncode == 2 and done.stderr.startswith(message) and done.stderr.count("\n") == 1


def test_a_broken_config_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"num_hidden_layers": "many"}')
    done = fit("--config", str(bad))
    assert done.returncode == 2 and done.stderr.startswith(
        f"rigctl: {bad}: num_hidden_layers: must be a whole number of layers from 1 to 1,000, not 'many'"
    )


def test_weights_come_from_the_safetensors_headers_with_the_mtp_head_apart(tmp_path: Path) -> None:
    def tensors(path: Path, entries: dict[str, tuple[str, list[int]]]) -> None:
        header, offset = {}, 0
        for name, (dtype, shape) in entries.items():
            size = 2 * shape[0] * shape[1]
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
            offset += size
        raw = json.dumps(header).encode()
        path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)

    tensors(
        tmp_path / "model-00001-of-00002.safetensors",
        {"model.layers.0.mlp.up_proj.weight": ("BF16", [1024, 512]), "lm_head.weight": ("BF16", [512, 512])},
    )
    tensors(tmp_path / "model-00002-of-00002.safetensors", {"mtp.fc.weight": ("BF16", [256, 512])})
    weights = from_checkpoint(tmp_path)
    assert weights is not None and weights.source == "safetensors headers"
    assert (weights.main_bytes, weights.mtp_bytes) == (2 * (1024 * 512 + 512 * 512), 2 * 256 * 512)


def test_boot_records_calibrate_the_budget_and_show_the_measurement(hub: Path, tmp_path: Path) -> None:
    """One boot of the profile on this rig logged 9.99 GiB and 350,518 tokens: the prediction is shown
    beside it with its error, and the per-rig correction rests on that one boot."""
    before = json.loads(fit("qwen36-27b-4090-tp2-mtp", "--json").stdout)
    argv = [
        sys.executable,
        "-m",
        "rigctl.sim.vllm_server",
        "serve",
        AWQ,
        "--tensor-parallel-size",
        "2",
        "--quantization",
        "awq_marlin",
        "--max-model-len",
        "32768",
        "--max-num-seqs",
        "8",
        "--speculative-config",
        '{"method":"mtp","num_speculative_tokens":3}',
        "--kv-cache-dtype",
        "fp8",
    ]
    write_boot(tmp_path, "qwen36-27b-4090-tp2-mtp", argv, 350_518, 9.99, max_concurrency=10.7)
    after = json.loads(fit("qwen36-27b-4090-tp2-mtp", "--json").stdout)
    predicted = before["layouts"][2]["available_kv_gib"]
    assert after["correction"]["boots"] == 1
    assert after["correction"]["gib"] == pytest.approx(9.99 - predicted, abs=0.01)
    assert after["layouts"][2]["available_kv_gib"] == pytest.approx(9.99, abs=0.01)
    measured = after["measured"]
    assert measured["pool_tokens"] == 350_518 and measured["available_kv_gib"] == 9.99
    assert abs(measured["pool_error"]) < 0.02 and abs(measured["budget_error"]) < 0.01
    text = fit("qwen36-27b-4090-tp2-mtp").stdout
    assert "correction: " in text and "from 1 boot(s) on this rig" in text
    assert "measured (the engine, last boot of qwen36-27b-4090-tp2-mtp on this rig" in text


def test_validate_refuses_what_vllm_would_refuse_and_lints_a_dp_layout_the_rule_splits(hub: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rigctl", "profile", "validate", "qwen36-27b-4090-dp2", "--sim", "2x4090-pcie"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "warning: data_parallel_size: the fit rule would split this model: the weights take 16.1" in done.stdout


def test_a_switch_to_a_profile_vllm_would_refuse_is_refused_before_anything_stops(tmp_path: Path) -> None:
    rig = Rig(tmp_path / "rig")
    try:
        hub = tmp_path / "hub"
        cache_model(hub, AWQ)
        rig.env["HF_HUB_CACHE"] = str(hub)
        assert rig.rigctl("start", "good").returncode == 0
        pid = rig.record()["pid"]
        path = rig.add_profile("crowded", "max_num_seqs = 1024\n")
        done = rig.rigctl("switch", "crowded")
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"{path}:4: max_num_seqs: max_num_seqs (1024) exceeds the " in done.stderr
        assert "blocks the GDN state can use: vLLM refuses to start" in done.stderr
        assert rig.record()["pid"] == pid
        rig.check_invariants()
    finally:
        rig.cleanup()


def test_a_shipped_profiles_model_not_on_disk_is_fitted_from_rigctls_copy_of_its_config() -> None:
    """Day one, before a download: the shipped profiles' models have their configs in rigctl."""
    done = fit("qwen36-27b-awq-tp2", "--json", sim="2x3090-nvlink")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["model"]["config"] == "rigctl's copy of its config.json (Qwen/Qwen3.6-27B-AWQ is not on this machine)"
    assert out["weights"]["source"].startswith("estimate") and out["recommended"]["tp"] == 2
    assert "config: rigctl's copy" in fit("qwen36-27b-awq-tp2", sim="2x3090-nvlink").stderr


def test_without_a_profile_max_num_seqs_is_named_as_the_limit_and_the_split_rule_still_holds() -> None:
    """vLLM's default max_num_seqs (256) is more than the GDN state's blocks of a replica on a 24 GB
    card: the replicas are not 'too big for one GPU', max_num_seqs is their limit, and the rule
    still splits a model at 67% of a card."""
    done = fit("--model", AWQ, "--max-model-len", "32768", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    replicas = next(lay for lay in out["layouts"] if (lay["tp"], lay["dp"]) == (1, 2))
    assert not replicas["fits"] and replicas["max_num_seqs"] == 256 and replicas["mamba_blocks"] < 256
    why = out["recommended"]["why"]
    assert (out["recommended"]["tp"], out["recommended"]["dp"]) == (2, 1)
    assert "split" in why and "does not fit one GPU" not in why
    assert f"at max_num_seqs {replicas['mamba_blocks']} or less: the GDN state's blocks; 256 was asked" in why


def test_without_a_gpu_the_layout_asked_is_sized_and_nothing_is_called_unfit() -> None:
    done = fit("--model", AWQ, "--max-model-len", "32768", "--max-num-seqs", "8", "--available-kv-gib", "5", sim=None)
    assert done.returncode == 0, done.stderr
    assert "TP1/DP1  yes" in done.stdout and "nothing fits" not in done.stdout
    assert "recommended: none (no GPU here" in done.stdout


def test_boots_of_a_model_not_on_disk_calibrate_from_rigctls_copy_of_its_config(tmp_path: Path) -> None:
    """The one rule for which config.json: a boot of a shipped profile's model that was never
    downloaded here is still predicted (from rigctl's copy) and so still corrects the budget."""
    argv = ["vllm", "serve", AWQ, "--tensor-parallel-size", "2", "--quantization", "awq_marlin"]
    write_boot(tmp_path, "p", [*argv, "--max-model-len", "32768", "--kv-cache-dtype", "fp8"], 300_000, 9.5)
    out = json.loads(fit("qwen36-27b-4090-tp2-mtp", "--json").stdout)
    assert out["correction"]["boots"] == 1 and out["correction"]["gib"] != 0


def test_weights_given_keep_the_mtp_head() -> None:
    out = json.loads(fit("qwen36-27b-4090-tp2-mtp", "--weights-gib", "16", "--json").stdout)
    assert out["weights"]["gib"] == 16 and out["weights"]["mtp_gib"] == pytest.approx(0.79, abs=0.01)
    assert out["weights"]["source"] == "--weights-gib (MTP estimated)"
    split = next(lay for lay in out["layouts"] if (lay["tp"], lay["dp"]) == (2, 1))
    assert split["budget_gib"]["mtp_head"] == pytest.approx(0.40, abs=0.01)  # shared embeddings: a layer and fc


def test_the_preflight_says_the_drafts_load_peak_at_the_speculative_config() -> None:
    """A replica with MTP: within the CUDA context's estimate a warning (it may load), past the card
    outright an error, pointing at speculative_config."""
    argv = ["vllm", "serve", "Qwen/Qwen3.6-27B-AWQ", "--data-parallel-size", "2", "--max-model-len", "32768"]
    argv += ["--max-num-seqs", "8", "--kv-cache-dtype", "fp8"]
    mtp = flags_from_argv([*argv, "--speculative-config", '{"method": "mtp", "num_speculative_tokens": 3}'])
    card = 23.99 * 2**30
    (finding,) = [f for f in check(mtp, (int(card), int(card))) if f.key == "speculative_config"]
    assert finding.severity == "warning" and finding.message.startswith("runs out of memory loading: 16.08 weights")
    assert "within the estimate of the CUDA context: it may load" in finding.message
    (smaller,) = [f for f in check(mtp, (22 * 2**30,) * 2) if f.key == "speculative_config"]
    assert smaller.severity == "error" and "predicted from rigctl's copy of its config.json" in smaller.message
    plain = flags_from_argv(argv)
    assert not [f for f in check(plain, (int(card), int(card))) if f.key == "speculative_config"]


def test_a_switch_says_each_warning_once_with_one_tag(tmp_path: Path) -> None:
    """A profile's warning (here the fit rule on a DP layout) is said by the switch as one line,
    `warning: FILE:LINE: KEY: ...`, never `warning: FILE:LINE: warning: KEY: ...`."""
    rig = Rig(tmp_path / "rig")
    try:
        rig.add_profile("dp2", "tensor_parallel_size = 1\ndata_parallel_size = 2\nmax_model_len = 16384\nmax_num_seqs = 4\n")
        switched = rig.rigctl("switch", "dp2")
        said = [line for line in switched.stdout.splitlines() if "the fit rule would split this model" in line]
        assert len(said) == 1, switched.stdout + switched.stderr
        assert said[0].count("warning:") == 1 and "dp2.toml:" in said[0], said[0]
    finally:
        rig.cleanup()
