"""The SFT loss scored only where it counts: the LM head at the assistant (label) tokens.

TRL's fused LM head scores only the labelled positions on Triton devices; elsewhere (CPU)
it projects EVERY position through the 49k-word head and masks afterwards. A buyer chat
is ~90 % prompt, so on CPU that is ~10x the head work the loss needs. ``CompactLossMixin``
runs the backbone once over the whole chat (every decision of the episode in one
forward), gathers the hidden states whose next token is a label, and projects only
those: the same mean token cross-entropy, the same gradients.
"""

from __future__ import annotations

from typing import Any

IGNORE = -100  # the label of a token without loss (the prompt's tokens)


def _parts(model: Any) -> tuple[Any, Any]:
    """The backbone (transformer without head) and the LM head of ``model``, through a
    PEFT wrapper and TRL's patched forward alike."""
    inner = model
    if hasattr(inner, "get_base_model"):  # peft: LoRA layers live inside the backbone
        inner = inner.get_base_model()
    backbone = getattr(inner, inner.base_model_prefix)
    return backbone, inner.get_output_embeddings()


def compact_loss(
    model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None
) -> tuple[Any, dict[str, float]]:
    """Mean cross-entropy over the label tokens of ``inputs`` (``input_ids``, ``labels``,
    ``attention_mask`` or ``position_ids``), and its metrics (token accuracy, counts)."""
    import torch
    import torch.nn.functional as F

    backbone, head = _parts(model)
    labels = inputs["labels"]
    forward = {
        k: v
        for k, v in inputs.items()
        if k not in ("labels", "num_items_in_batch") and v is not None
    }
    hidden = backbone(**forward, use_cache=False).last_hidden_state
    targets = labels[:, 1:]
    keep = targets != IGNORE
    picked = hidden[:, :-1][keep]  # (loss tokens, hidden): the only rows the head sees
    logits = head(picked).float()
    wanted = targets[keep]
    total = F.cross_entropy(logits, wanted, reduction="sum")
    count = keep.sum() if num_items_in_batch is None else num_items_in_batch
    loss = total / torch.as_tensor(count, device=total.device).clamp(min=1)
    with torch.no_grad():
        correct = (logits.argmax(-1) == wanted).sum().item()
    n = int(keep.sum().item())
    return loss, {"correct": float(correct), "loss_tokens": float(n)}


class CompactLossMixin:
    """For a TRL SFTTrainer subclass: ``compute_loss`` by ``compact_loss``, keeping TRL's
    ``mean_token_accuracy`` and ``num_tokens`` metrics."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if return_outputs:  # a caller that wants the logits gets TRL's full-logit path
            return super().compute_loss(model, inputs, True, num_items_in_batch)
        # accelerate autocasts by wrapping model.forward, which compact_loss goes around
        # (backbone and head are called directly), so the trainer's precision is set here
        with self.accelerator.autocast():
            loss, stats = compact_loss(model, inputs, num_items_in_batch)
        mode = "train" if self.model.training else "eval"
        metrics = self._metrics[mode]
        n = stats["loss_tokens"]
        metrics["mean_token_accuracy"].append(stats["correct"] / n if n else 0.0)
        if mode == "train":
            mask = inputs.get("attention_mask")
            tokens = int(mask.sum().item()) if mask is not None else inputs["input_ids"].numel()
            self._total_train_tokens += tokens
        metrics["num_tokens"] = [self._total_train_tokens]
        return loss
