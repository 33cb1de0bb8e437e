"""Masked grouped-query attention without copying the cache, for the CPU backend.

transformers' ``sdpa`` attention repeats every key/value head once per query head it
serves whenever an attention mask is given (CUDA's fused kernels need that), and a padded
batch always has a mask: each decode step then copies the whole key/value cache of every
layer, a cost that grows with rows x context and made a batch of rows barely cheaper than
the rows one at a time. PyTorch's CPU kernel takes the grouping itself (``enable_gqa``)
with a mask, reading the shared heads in place; it computes the same sums in the same
order, so the scores are the same bits (tests/negotiation/llm/test_attention.py).

``register`` adds it to transformers' attention and mask registries under ``NAME``, with
the ``sdpa`` mask (a model loaded with ``attn_implementation=NAME`` builds its masks as
for ``sdpa``).
"""

from __future__ import annotations

from typing import Any

NAME = "sdpa_gqa"


def register() -> str:
    """Registers the attention (idempotent) and returns its name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, sdpa_gqa_forward)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    return NAME


def sdpa_gqa_forward(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **_: Any,
) -> tuple[Any, None]:
    """transformers' attention-function contract: [batch, heads, tokens, dim] in, the
    output as [batch, tokens, heads, dim] and no weights out."""
    import torch

    causal = getattr(module, "is_causal", True) if is_causal is None else is_causal
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        # without a mask the causal flag masks (the whole prompt computed at once)
        is_causal=bool(causal and attention_mask is None and query.shape[2] > 1),
        enable_gqa=key.shape[1] != query.shape[1],
    )
    return out.transpose(1, 2).contiguous(), None
