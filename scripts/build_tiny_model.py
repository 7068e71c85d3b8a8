"""Build the tiny random-weight model the real-vLLM tests serve: offline, deterministic.

A Qwen2-style causal LM (hidden 256, 2 layers, 4 query and 2 KV heads of 64, vocab 4096,
tied embeddings, bf16) whose KV cache costs exactly 2 layers x 2 (K, V) x 2 heads x 64 x
2 bytes = 1,024 bytes per token, so 1 GiB of KV holds 1,048,576 tokens; and a byte-level BPE
tokenizer trained on this interpreter's own standard library, with a ChatML template. Two
builds with the same Python and libraries are byte-identical.

Runs in the real-vLLM venv (transformers and tokenizers come with vLLM):
    python scripts/build_tiny_model.py DIR
"""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path

SEED = 20261201
VOCAB = 4096
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def corpus() -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.glob("*.py"))[:200]
    return [p.read_text(errors="replace") for p in files]


def build_tokenizer(target: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB - len(SPECIALS),
        special_tokens=SPECIALS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None, unk_token=None
    )
    fast.chat_template = CHATML
    fast.save_pretrained(str(target))


def build_model(target: Path) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(SEED)
    config = Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
        torch_dtype="bfloat16",
        eos_token_id=2,
        bos_token_id=None,
        pad_token_id=0,
        use_sliding_window=False,
    )
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(str(target), safe_serialization=True)
    generation = target / "generation_config.json"
    if generation.exists():  # transformers stamps its version there; drop it for a reproducible tree
        data = json.loads(generation.read_text())
        data.pop("transformers_version", None)
        generation.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    build_model(target)
    build_tokenizer(target)
    print(f"built {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
