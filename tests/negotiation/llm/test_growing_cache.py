"""The cache that grows in place holds exactly what transformers' DynamicLayer holds,
through appends, crops (jump-forward drafts cut back) and buffer replacements, and a
model reads the same logits from it."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from negotiation.llm.growing_cache import MIN_ROOM, _layer_class, growing_cache  # noqa: E402


def test_appends_and_crops_hold_what_dynamic_layers_hold() -> None:
    from transformers.cache_utils import DynamicLayer

    grown, plain = _layer_class()(), DynamicLayer()
    gen = torch.Generator().manual_seed(0)
    sizes = [300, 1, 1, 40, 1, MIN_ROOM, 3, 200]  # past the first buffer once
    buffers = set()
    for n, add in enumerate(sizes):
        k, v = torch.randn(2, 3, add, 8, generator=gen), torch.randn(2, 3, add, 8, generator=gen)
        for a, b in zip(grown.update(k, v), plain.update(k, v), strict=True):
            assert torch.equal(a, b)
        if n % 3 == 2:  # a refused draft: cut the last tokens back
            grown.crop(-2)
            plain.crop(-2)
        assert torch.equal(grown.keys, plain.keys) and torch.equal(grown.values, plain.values)
        assert grown.keys.data_ptr() == grown._room[0].data_ptr()  # views, not copies
        buffers.add(grown._room[0].data_ptr())
    assert len(buffers) == 2


def test_a_replaced_tensor_is_not_written_behind() -> None:
    """Anything that replaces the keys (batch selection) gets a fresh buffer."""
    layer = _layer_class()()
    layer.update(torch.ones(2, 1, 4, 2), torch.ones(2, 1, 4, 2))
    layer.batch_select_indices(torch.tensor([1]))
    keys, _ = layer.update(torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2))
    assert keys.shape == (1, 1, 5, 2) and keys[0, 0, :4].eq(1).all() and keys[0, 0, 4].eq(0).all()


def test_a_model_reads_the_same_logits(tiny_model: Path) -> None:
    from transformers import AutoModelForCausalLM, DynamicCache

    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    ids = torch.arange(5, 45)[None]
    logits = []
    for cache in (DynamicCache(config=model.config), growing_cache(model.config)):
        with torch.inference_mode():
            out = [model(ids, past_key_values=cache, use_cache=True).logits[:, -1]]
            token = out[0].argmax(-1, keepdim=True)
            for _ in range(MIN_ROOM + 20):  # past the first buffer
                out.append(model(token, past_key_values=cache, use_cache=True).logits[:, -1])
                token = out[-1].argmax(-1, keepdim=True)
        logits.append(torch.cat(out))
    assert torch.equal(*logits)


def test_keep_rows_drops_rows_and_leading_columns_then_grows_in_place() -> None:
    """A shrinking batch keeps the chosen rows, in order, from a column on; the next
    update writes into the new buffer's spare room, not a copy."""
    from negotiation.llm.growing_cache import keep_rows

    cache = growing_cache(_config())
    keys = torch.arange(3 * 2 * 6 * 4, dtype=torch.float32).reshape(3, 2, 6, 4)
    for layer in range(len(cache.layers)):
        cache.update(keys + layer, -keys - layer, layer)
    keep_rows(cache, [2, 0], 2)
    for n, layer in enumerate(cache.layers):
        assert torch.equal(layer.keys, (keys + n)[[2, 0], :, 2:])
        assert torch.equal(layer.values, (-keys - n)[[2, 0], :, 2:])
        step = torch.full((2, 2, 1, 4), 7.0)
        grown, _ = layer.update(step, step)
        assert grown.shape == (2, 2, 5, 4) and grown[:, :, -1].eq(7).all()
        assert grown.data_ptr() == layer._room[0].data_ptr()


def _config():
    from transformers import GPT2Config

    return GPT2Config(n_layer=2, n_head=2, n_embd=8)
