"""The CPU backend's masked grouped-query attention gives the same bits as transformers'
``sdpa`` (which repeats the key/value heads), on a tiny grouped-query Llama and on the
shipped SmolLM2 (9 query heads, 3 key/value heads), for every shape the backend feeds:
a left-padded prompt, the rest of a prompt after a cached prefix, decode steps, and an
unpadded prompt (no mask: the causal flag). The backend's ``attention`` option names
one, and an unknown name is refused before anything loads."""

from __future__ import annotations

import pytest

from negotiation.llm.attention import NAME, register


def _logits(model, ids, mask) -> list:
    import torch

    from negotiation.llm.growing_cache import growing_cache

    rows, width = ids.shape
    cut = width * 2 // 3
    positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)
    past = growing_cache(model.config)
    out = []
    with torch.inference_mode():
        for part in (slice(0, cut), slice(cut, width)):  # a cached prefix, then the rest
            out.append(
                model(
                    input_ids=ids[:, part],
                    attention_mask=mask[:, : part.stop],
                    position_ids=positions[:, part],
                    past_key_values=past,
                    use_cache=True,
                ).logits
            )
        last = positions[:, -1:]
        for step in range(4):
            mask = torch.cat([mask, mask.new_ones(rows, 1)], 1)
            last = last + 1
            token = torch.full((rows, 1), 5 + step)
            out.append(
                model(
                    input_ids=token,
                    attention_mask=mask,
                    position_ids=last,
                    past_key_values=past,
                    use_cache=True,
                ).logits
            )
        out.append(model(input_ids=ids[:1], use_cache=False).logits)  # no mask at all
    return out


def _batch(rows: int, width: int, vocab: int):
    import torch

    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(3, vocab, (rows, width), generator=generator)
    mask = torch.ones(rows, width, dtype=torch.long)
    for row in range(rows):
        mask[row, : row * width // (2 * rows)] = 0  # left padding, a different amount each
    return ids, mask


def _assert_same_bits(reference, gqa, vocab: int, rows: int = 4, width: int = 48) -> None:
    import torch

    ids, mask = _batch(rows, width, vocab)
    for a, b in zip(_logits(reference, ids, mask), _logits(gqa, ids, mask), strict=True):
        assert torch.equal(a, b)


def test_a_tiny_grouped_query_llama_scores_the_same_bits() -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = dict(
        vocab_size=200,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,  # two query heads per key/value head
        max_position_embeddings=256,
    )
    torch.manual_seed(0)
    reference = LlamaForCausalLM(LlamaConfig(**config, attn_implementation="sdpa")).eval()
    gqa = LlamaForCausalLM(LlamaConfig(**config, attn_implementation=register())).eval()
    gqa.load_state_dict(reference.state_dict())
    assert gqa.config._attn_implementation == NAME
    _assert_same_bits(reference, gqa, vocab=200)


@pytest.mark.slow
def test_smollm2_scores_the_same_bits_and_the_cpu_backend_uses_it() -> None:
    import torch
    from transformers import AutoModelForCausalLM

    from negotiation.llm.models import resolve_model
    from negotiation.llm.registry import get_backend

    folder = resolve_model("smollm2")
    reference = AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, attn_implementation="sdpa"
    ).eval()
    backend = get_backend("transformers", "smollm2")
    assert backend.device.type == "cpu"
    assert backend.model.config._attn_implementation == NAME
    _assert_same_bits(reference, backend.model, vocab=reference.config.vocab_size)


def test_the_backend_takes_an_attention_by_name_and_refuses_an_unknown_one(tiny_model) -> None:
    from negotiation.llm.transformers_backend import TransformersBackend

    chosen = TransformersBackend(str(tiny_model), device="cpu", attention="sdpa")
    assert chosen.model.config._attn_implementation == "sdpa"
    default = TransformersBackend(str(tiny_model), device="cpu")
    assert default.model.config._attn_implementation == NAME  # CPU's default
    with pytest.raises(ValueError, match="bad options for the transformers backend: attention"):
        TransformersBackend(str(tiny_model), device="cpu", attention="flash")
