"""The KV pool from a KV budget: vLLM's own bytes-to-blocks step, exact to the block.

Read from vLLM's source (v1/core/kv_cache_utils.py, kv_cache_interface.py, mamba_utils.py) and
checked against real boot logs (../shared/reference/fit/FACTS.md, tests/fit/): per rank, a
full-attention layer holds `max(1, kv_heads // tp) x head_dim x 2 x kv_bytes` a token; a hybrid
model's Gated DeltaNet layers hold a fixed state per sequence, the attention block is grown
until one page holds that state, layers are grouped, and all groups draw from one pool of
`available // (groups x page)` blocks. The logged "KV cache size" is
`int(blocks / blocks_per_request x max_model_len)` since vLLM 0.20.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rigctl.vllm.model import DTYPE_BYTES, ModelDims

DEFAULT_BLOCK = 16


def kv_dtype_bytes(kv_cache_dtype: str | None, model: ModelDims) -> int:
    """1 for any fp8 (or int8) KV, else the model dtype's width (`auto` follows the weights)."""
    value = (kv_cache_dtype or "auto").lower()
    if value.startswith(("fp8", "int8")):
        return 1
    if value in DTYPE_BYTES:
        return DTYPE_BYTES[value]
    return 2 if model.dtype_bytes == 4 else model.dtype_bytes  # vLLM serves float32 checkpoints as bf16 by default


@dataclass(frozen=True)
class PoolShape:
    """How one rank's KV memory is cut into blocks, before any budget is known."""

    block_size: int  # tokens per block (hybrid: grown so a page holds a state)
    page_bytes: int  # one block of one layer group
    groups: int  # layer groups sharing the pool (1 for a dense model)
    attention_layers: int  # including MTP draft layers
    linear_layers: int
    state_page_bytes: int  # a GDN layer's state per sequence, before padding (0 for dense)
    state_blocks_per_seq: int  # blocks every sequence pins whatever its length (0 for dense)
    attention_token_bytes: int  # one token of one attention layer on one rank

    @property
    def padding(self) -> float:
        """The share of a state page that is padding (vLLM: 'Padding mamba page size by X%')."""
        return (self.page_bytes / self.state_page_bytes - 1) if self.state_page_bytes else 0.0

    @property
    def group_bytes(self) -> int:
        return self.groups * self.page_bytes

    def blocks_per_request(self, max_model_len: int) -> int:
        if not self.linear_layers:
            return math.ceil(max_model_len / self.block_size)
        per_attention = math.ceil(self.attention_layers / self.groups)
        return per_attention * math.ceil(max_model_len / self.block_size) + self.state_blocks_per_seq


def pool_shape(
    model: ModelDims,
    tp: int,
    kv_cache_dtype: str | None = None,
    spec_tokens: int = 0,
    prefix_caching: bool = True,
    block_size: int | None = None,
    mamba_ssm_dtype: str | None = None,
) -> PoolShape:
    kv_bytes = kv_dtype_bytes(kv_cache_dtype, model)
    attn_tok = max(1, model.kv_heads // tp) * model.head_dim * 2 * kv_bytes
    if not model.hybrid or model.linear is None:
        block = block_size or DEFAULT_BLOCK
        # one group of every layer; its page is a block of all of them
        return PoolShape(block, block * attn_tok * model.attention_layers, 1, model.attention_layers, 0, 0, 0, attn_tok)
    gdn = model.linear
    conv_bytes = model.dtype_bytes if model.dtype_bytes != 4 else 2
    ssm_name = (mamba_ssm_dtype or "auto").lower()
    ssm_bytes = DTYPE_BYTES.get(gdn.ssm_dtype if ssm_name == "auto" else ssm_name, 4)
    conv = (gdn.conv_kernel - 1 + spec_tokens) * (2 * gdn.key_heads * gdn.key_dim + gdn.value_heads * gdn.value_dim)
    state = (conv // tp) * conv_bytes + (gdn.value_heads // tp) * gdn.value_dim * gdn.key_dim * ssm_bytes
    block = block_size or DEFAULT_BLOCK * math.ceil(state / (DEFAULT_BLOCK * attn_tok))
    attention = model.attention_layers + (model.mtp_layers if spec_tokens else 0)  # MTP drafts attend too
    low, high = min(attention, model.linear_layers), max(attention, model.linear_layers)
    groups = high if high < 1.5 * low else low
    per_seq = (2 + spec_tokens) if prefix_caching else (1 + spec_tokens)  # "align" mode whenever prefix caching is on
    return PoolShape(
        block,
        block * attn_tok,
        groups,
        attention,
        model.linear_layers,
        state,
        math.ceil(model.linear_layers / groups) * per_seq,
        attn_tok,
    )


@dataclass(frozen=True)
class Pool:
    shape: PoolShape
    available_bytes: int
    max_model_len: int
    num_blocks: int
    blocks_per_request: int
    tokens: int  # what vLLM logs as "KV cache size: N tokens"
    max_concurrency: float  # full-length requests at once

    @property
    def fits_one_request(self) -> bool:
        """vLLM refuses to start when one max_model_len request does not fit the pool."""
        return self.num_blocks >= self.blocks_per_request

    @property
    def mamba_blocks(self) -> int | None:
        """The blocks the GDN state draws from (max_num_seqs may not exceed them); None for dense."""
        return self.num_blocks if self.shape.linear_layers else None

    @property
    def state_bytes_per_seq(self) -> int:
        """What every sequence pins on this rank whatever its length: its state blocks, each a
        page in every group (a block id indexes all groups' tensors)."""
        return self.shape.state_blocks_per_seq * self.shape.group_bytes

    def max_len_for(self, concurrent: int) -> int:
        """The largest max_model_len at which `concurrent` full-length requests fit this pool."""
        per_request = self.num_blocks / concurrent - self.shape.state_blocks_per_seq
        if self.shape.linear_layers:
            per_request /= math.ceil(self.shape.attention_layers / self.shape.groups)
        return max(0, math.floor(per_request)) * self.shape.block_size


def logged_range(gib: float) -> tuple[int, int]:
    """The bytes a logged `Available KV cache memory: X.XX GiB` can stand for (vLLM rounds to 2
    decimals): [low, high)."""
    return int((gib - 0.005) * 2**30), int((gib + 0.005) * 2**30)


def pool(shape: PoolShape, available_bytes: int, max_model_len: int) -> Pool:
    blocks = max(0, available_bytes // shape.group_bytes)
    per_request = shape.blocks_per_request(max_model_len)
    concurrency = blocks / per_request
    return Pool(shape, available_bytes, max_model_len, blocks, per_request, int(concurrency * max_model_len), concurrency)
