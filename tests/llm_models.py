"""Tiny language models built in the test itself: no download, a few hundred kilobytes,
loaded in well under a second. Their weights are random, so their text is noise, which is
exactly what constrained decoding and batching must cope with.

A byte-level BPE tokenizer is trained in process on a corpus that covers JSON (braces,
quotes, digits, the action names) and chat text, gets a ChatML chat template like
SmolLM2's, and is saved with a small GPT-2 or Llama model of the same vocabulary.
"""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

_CORPUS = [
    '{"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01", '
    '"price": 950.5, "message": "Can you do better?"}',
    '{"action_type": "award_contract", "quantity": 12, "split": 0.5, "ok": true, '
    '"none": null, "list": [1, 2, 3], "neg": -4e-2}',
    "raise_pr defer reject hedge escalate accept counter walk_away",
    "You are a procurement manager. Budget 10000, deadline week 4. Reply with JSON.",
    "The supplier asks 1200 per unit; the market index is 1.03. Offer a fair price.",
    "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ .,:;!?'\"-_()[]{}\\/",
]


def build_tiny_model(
    folder: Path,
    *,
    arch: str = "gpt2",
    seed: int = 0,
    vocab_size: int = 400,
    positions: int = 512,
) -> Path:
    """Save a tokenizer and a randomly initialised 2-layer model to ``folder``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
    )

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    bpe.train_from_iterator(_CORPUS * 20, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    common = {
        "vocab_size": len(tokenizer),
        "bos_token_id": ids["<|im_start|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    torch.manual_seed(seed)
    if arch == "gpt2":
        model = GPT2LMHeadModel(
            GPT2Config(n_layer=2, n_embd=32, n_head=2, n_positions=positions, **common)
        )
    elif arch == "llama":  # vLLM's CPU attention wants a head size of 32 or more
        model = LlamaForCausalLM(
            LlamaConfig(
                hidden_size=64,
                intermediate_size=128,
                num_hidden_layers=2,
                num_attention_heads=2,
                num_key_value_heads=2,
                max_position_embeddings=positions,
                tie_word_embeddings=True,
                **common,
            )
        )
    else:
        raise ValueError(f"unknown tiny architecture {arch!r}")
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
