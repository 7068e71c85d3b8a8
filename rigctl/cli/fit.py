"""rigctl fit: will a profile fit, how many tokens of KV it gets, and TP or DP (predicted)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rigctl import fmt
from rigctl.cli import common
from rigctl.errors import NoDriverError

if TYPE_CHECKING:
    from rigctl.fit.answer import FitAnswer
    from rigctl.gpu.model import RigInfo


def register(sub: common.Subparsers) -> None:
    p = common.add_command(sub, "fit")
    p.add_argument("profile", nargs="?", metavar="PROFILE", help="a profile: its model, flags and layout")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--config", type=Path, metavar="PATH", help="the model's config.json")
    where.add_argument("--model", metavar="DIR", help="a model dir or Hugging Face id (its config.json is read)")
    p.add_argument("--tp", type=int, metavar="N", help="only this tensor-parallel size")
    p.add_argument("--dp", type=int, metavar="N", help="only this data-parallel size")
    p.add_argument("--max-model-len", type=int, metavar="L")
    p.add_argument("--max-num-seqs", type=int, metavar="S")
    p.add_argument("--kv-cache-dtype", metavar="D", help="auto, fp8, fp8_e4m3, fp8_e5m2, ...")
    p.add_argument("--num-speculative-tokens", type=int, metavar="K", help="MTP speculative tokens (0: off)")
    p.add_argument("--gpu-memory-utilization", type=float, metavar="U")
    p.add_argument("--max-num-batched-tokens", type=int, metavar="T")
    p.add_argument("--enforce-eager", action="store_true", default=None, help="no CUDA graphs")
    p.add_argument("--weights-gib", type=float, metavar="W", help="weight GiB of the whole model (all ranks)")
    p.add_argument(
        "--available-kv-gib",
        type=float,
        metavar="G",
        help="the KV budget per GPU, e.g. a boot log's 'Available KV cache memory' (skips the budget)",
    )
    p.add_argument("--no-prefix-caching", action="store_true", help="as --no-enable-prefix-caching")
    p.add_argument(
        "--solve-max-len",
        action="store_true",
        help="print only the largest max_model_len for 1, 2 and 4 concurrent full-length requests",
    )
    common.add_json_flag(p)
    p.set_defaults(handler=run)


def _check_ranges(args: argparse.Namespace) -> None:
    from rigctl.profiles.validate import DRAFT_TOKENS, VLLM_RULES
    from rigctl.rules import Amount, Count

    # the flags that stand for a profile's [vllm] keys take those keys' rules
    common.check_flags(
        args,
        {
            "tp": VLLM_RULES["tensor_parallel_size"],
            "dp": VLLM_RULES["data_parallel_size"],
            "max_model_len": Count("tokens", 1),
            "max_num_seqs": VLLM_RULES["max_num_seqs"],
            "max_num_batched_tokens": Count("tokens", 1),
            "num_speculative_tokens": Count(DRAFT_TOKENS.unit),  # 0: off, here
            "gpu_memory_utilization": VLLM_RULES["gpu_memory_utilization"],
            "weights_gib": Amount("GiB", positive=True),
            "available_kv_gib": Amount("GiB", positive=True),
        },
    )


def run(args: argparse.Namespace) -> int:
    from rigctl.fit.answer import FitQuestion, answer
    from rigctl.state.boots import read_history
    from rigctl.vllm.flags import ServeFlags, flags_from_argv, is_mtp

    _check_ranges(args)
    flags, profile_name = ServeFlags(), None
    if args.profile:
        from rigctl.profiles.store import ProfileStore
        from rigctl.profiles.vllm_args import render

        profile = ProfileStore().load(args.profile)
        table = common.option_tables(args, cached_only=True).choose(profile).table
        spec = render(profile, table)
        flags, profile_name = flags_from_argv(spec.argv, spec.env), profile.name
    mtp = args.num_speculative_tokens
    flags = flags.but(
        model=args.model,
        tensor_parallel_size=args.tp,
        data_parallel_size=args.dp,
        max_model_len=args.max_model_len,
        max_num_seqs=args.max_num_seqs,
        kv_cache_dtype=args.kv_cache_dtype,
        num_speculative_tokens=mtp,
        speculative_method="mtp" if mtp and not is_mtp(flags.speculative_method) else None,  # --num-speculative-tokens is MTP's
        gpu_memory_utilization=args.gpu_memory_utilization,
        max_num_batched_tokens=args.max_num_batched_tokens,
        enforce_eager=args.enforce_eager,
        enable_prefix_caching=False if args.no_prefix_caching else None,
    )
    question = FitQuestion(flags, profile_name, args.config, args.weights_gib, args.available_kv_gib, args.tp, args.dp)
    rig = _rig(args, args.available_kv_gib is not None or flags.kv_cache_memory_bytes is not None)
    found = answer(question, rig, read_history().records)
    if args.json:
        common.print_json(found.to_json())
        return 0
    if args.solve_max_len:
        advice = found.advice
        pick = (
            found.own
            if profile_name and found.own
            else next((lay for lay in found.layouts if advice and (lay.tp, lay.dp) == (advice.tp, advice.dp)), found.layouts[0])
        )
        print(f"{pick.name} (predicted): " + ", ".join(f"{n} at once: max_model_len {pick.tiers.get(n, 0):,}" for n in (1, 2, 4)))
        return 0
    _print(args, found)
    print(f"config: {found.config_source}", file=sys.stderr)
    return 0


def _rig(args: argparse.Namespace, budget_known: bool) -> RigInfo:
    """The rig's GPUs; without a driver, an empty rig when the KV budget is given (the KV step
    needs no GPU: the CPU build, a boot log from elsewhere)."""
    from rigctl.backends import open_backend, selected_sim
    from rigctl.gpu.model import RigInfo

    try:
        backend = open_backend(selected_sim(getattr(args, "sim", None)))
    except NoDriverError as exc:
        if budget_known:
            return RigInfo(backend="none", gpus=())
        raise NoDriverError(
            f"{exc}; rigctl fit needs the rig's GPUs for the budget (or --sim NAME, or --available-kv-gib)"
        ) from None
    try:
        return backend.info()
    finally:
        backend.close()


def _print(args: argparse.Namespace, answer: FitAnswer) -> None:
    from rigctl.vllm.memory import CUDA_CONTEXT, draft_own_layers

    dims, weights, rig, inputs, found = answer.dims, answer.weights, answer.rig, answer.inputs, answer.layouts
    advice, measured, fix = answer.advice, answer.measured, answer.correction
    own = answer.own if answer.question.profile else None
    kind = (
        f"hybrid: {dims.attention_layers} full-attention + {dims.linear_layers} Gated DeltaNet layers"
        if dims.hybrid
        else f"dense: {dims.attention_layers} attention layers"
    )
    names = sorted({g.name for g in rig.gpus})
    where = (
        f"on {len(rig.gpus)}x {', '.join(names)} ({fmt.gib(min(inputs.gpu_totals))} each)"
        if rig.gpus
        else "(no GPU: the KV step alone)"
    )
    print(f"{dims.name} {where}, all figures PREDICTED")
    print(
        f"  model: {kind}, {dims.kv_heads} KV heads x {dims.head_dim}"
        + (f", {dims.mtp_layers} MTP layer(s)" if dims.mtp_layers else "")
    )
    print(
        f"  weights: {fmt.gib(weights.main_bytes, 2)}"
        + (f" + MTP head {fmt.gib(weights.mtp_bytes, 2)}" if weights.mtp_bytes and inputs.flags.mtp_tokens else "")
        + f" ({weights.source})"
    )
    if weights.mtp_bytes and inputs.flags.mtp_tokens:
        own_layers = draft_own_layers(dims, 1)
        print(
            f"  MTP head: {fmt.gib(weights.mtp_bytes, 2)} resident, its decoder layer(s) and 2h->h projection, unquantised; "
            f"while it loads, the draft also holds its own embedding and LM head ({fmt.gib(own_layers, 2)} over the TP "
            "ranks), then takes the target's: each layout's load peak counts them (rigctl/vllm/memory.py)"
        )
    offload = answer.offload()
    if offload is not None:
        print(
            f"  KV offload: {offload['gib']:g} GiB of host RAM pinned ({offload['backend']}; summed over the TP ranks): "
            f"~{offload['tokens']:,} tokens of attention KV beside the GPU pool (the GDN states stay on the GPU)"
        )
    print(
        f"  settings: max_model_len {inputs.length:,}, max_num_seqs {found[0].max_num_seqs if found else '?'}, "
        f"KV {inputs.flags.kv_cache_dtype or 'auto'}, MTP {inputs.flags.mtp_tokens or 'off'}, "
        f"gpu_memory_utilization {inputs.flags.utilization}, prefix caching {'on' if inputs.flags.prefix_caching else 'off'}"
        + (", eager" if inputs.flags.enforce_eager else "")
    )
    if inputs.available_kv_bytes is not None:
        print(f"  KV budget given: {inputs.available_kv_bytes / 2**30:.4g} GiB per GPU (the budget step is skipped)")
    rows = [
        ["layout", "fits", "KV GiB/GPU", "block", "blocks", "pool tokens", "max conc", "state/seq", "1x len", "2x len", "4x len"]
    ]
    for lay in found:
        p = lay.pool
        mark = " *" if own is not None and lay is own else ""
        rows.append(
            [
                lay.name + mark,
                "yes" if lay.fits else "NO",
                f"{lay.available_gib:.2f}" if lay.available_gib is not None else "-",
                f"{p.shape.block_size:,}" if p else "-",
                f"{p.num_blocks:,}" if p else "-",
                (
                    f"{p.tokens:,}"
                    if not lay.pool_range or lay.pool_range[0] == lay.pool_range[1]
                    else f"{lay.pool_range[0]:,}-{lay.pool_range[1]:,}"
                )
                if p
                else "-",
                f"{p.max_concurrency:.2f}x" if p else "-",
                fmt.mib(p.state_bytes_per_seq) if p and p.shape.linear_layers else "-",
                *[f"{lay.tiers[n]:,}" if lay.tiers else "-" for n in (1, 2, 4)],
            ]
        )
    print()
    print(fmt.table(rows, "<<>>>>>>>>>"))
    for lay in found:
        if lay.why_not:
            print(f"  {lay.name}: {lay.why_not}")
    shown = own or (
        found[0] if len(found) == 1 else next((lay for lay in found if advice and (lay.tp, lay.dp) == (advice.tp, advice.dp)), None)
    )
    if shown is not None and shown.budget is not None:
        b = shown.budget
        print(
            f"\nbudget per GPU ({shown.name}): {b.requested / 2**30:.2f} requested - {b.weights / 2**30:.2f} weights"
            + (f" - {b.mtp_head / 2**30:.2f} MTP head" if b.mtp_head else "")
            + f" - {b.activation / 2**30:.2f} activation - {b.non_torch / 2**30:.2f} non-torch"
            + f" - {b.graphs / 2**30:.2f} CUDA graphs - 0.15 margin"
            + (f" {b.correction:+.2f} correction" if b.correction else "")
            + f" = {b.available / 2**30:.2f} GiB"
        )
        if b.draft_own:
            print(
                f"load peak per GPU ({shown.name}): {b.weights / 2**30:.2f} weights + {b.mtp_head / 2**30:.2f} MTP head"
                f" + {b.draft_own / 2**30:.2f} draft's own embedding and LM head + {b.non_torch / 2**30:.2f} non-torch"
                f" + {CUDA_CONTEXT:.2f} CUDA context = {b.load_peak / 2**30:.2f} of {b.total / 2**30:.2f} GiB: "
                f"{b.load_margin() / 2**30:.2f} GiB to spare"
            )
    print(f"correction: {fix.describe()}")
    if shown is not None and shown.pool is not None and shown.pool.shape.linear_layers:
        p = shown.pool
        print(
            f"hybrid step: attention block grown to {p.shape.block_size:,} tokens so a page holds a GDN state "
            f"(padded {p.shape.padding:.2%}); {p.shape.groups} layer groups ({p.shape.attention_layers} attention, "
            f"{p.shape.linear_layers} GDN) share {p.num_blocks:,} blocks"
        )
        print(
            f"state: every sequence pins {p.shape.state_blocks_per_seq} blocks ({fmt.mib(p.state_bytes_per_seq)} "
            f"per GPU) whatever its length; the GDN state may use {p.mamba_blocks:,} blocks, max_num_seqs "
            f"{shown.max_num_seqs}"
        )
    if advice is not None:
        print(f"\nrecommended: TP{advice.tp}/DP{advice.dp}: {advice.why}")
    elif not rig.gpus:
        print("\nrecommended: none (no GPU here: only the layout asked for was sized, from the KV budget given)")
    elif args.tp is None and args.dp is None and not any(lay.fits for lay in found):
        print("\nrecommended: nothing fits this rig (see the reasons above)")
    if measured is not None:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(measured.when))
        line = f"\nmeasured (the engine, last boot of {args.profile} on this rig, {when}): pool {measured.pool_tokens:,} tokens"
        if measured.available_kv_gib is not None:
            line += f", available KV {measured.available_kv_gib:.2f} GiB"
        if own is not None and own.pool is not None and measured.pool_tokens:
            line += f"; predicted {own.pool.tokens:,} ({own.pool.tokens / measured.pool_tokens - 1:+.1%})"
        print(line)
    for note in answer.notes:
        print(f"note: {note}", file=sys.stderr)
