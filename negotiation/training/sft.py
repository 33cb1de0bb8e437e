"""Supervised fine-tuning on rendered episodes: TRL's SFTTrainer, loss on the model's turns.

The chats are tokenized here, the way the transformers backend tokenizes a prompt at play
time (the model's chat template as text, then the tokenizer without added special
tokens), with a mask that is 1 exactly on each assistant turn's tokens (its JSON reply
and the end-of-turn marker). TRL turns ``assistant_masks`` into labels, so no chat
template needs ``{% generation %}`` markers.
"""

from __future__ import annotations

from typing import Any

from .contract import TrainingError
from .examples import LEARN


def _ids(tokenizer: Any, messages: list[dict[str, Any]], *, prompt: bool) -> list[int]:
    chat = [{"role": m["role"], "content": m["content"]} for m in messages]  # as played
    text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=prompt)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def tokenize_chat(tokenizer: Any, messages: list[dict[str, Any]]) -> dict[str, list[int]]:
    """``input_ids`` and ``assistant_masks`` of one chat (an assistant turn marked
    ``"learn": False`` is masked like a prompt). Each assistant turn's prompt must be a
    token prefix of the chat with that turn (true of ChatML-style templates); otherwise
    the model would be trained on a text it never reads at play time."""
    ids: list[int] = []
    mask: list[int] = []
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        prompt = _ids(tokenizer, messages[:i], prompt=True)
        full = _ids(tokenizer, messages[: i + 1], prompt=False)
        if prompt[: len(ids)] != ids or full[: len(prompt)] != prompt:
            raise TrainingError(
                "the model's chat template does not extend a chat by appending turns, so "
                "the training text would differ from the play-time prompt"
            )
        learn = int(message.get(LEARN, True))
        mask += [0] * (len(prompt) - len(ids)) + [learn] * (len(full) - len(prompt))
        ids = full
    if not any(mask):
        raise TrainingError("an example has no assistant turn to learn from")
    return {"input_ids": ids, "assistant_masks": mask}


def build_trainer(
    job: Any, model: Any, tokenizer: Any, args: dict[str, Any], peft: Any, *, compact: bool = True
) -> Any:
    """The SFTTrainer for ``job.examples`` (already validated non-empty): one chat (a whole
    episode, every decision in it) per sequence, batch 1 without padding by default.
    ``compact`` (the default) scores the LM head only at the label tokens (``loss.py``);
    False keeps TRL's own loss (the baseline ``bench/sft_speed.py`` compares against)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from .loss import CompactLossMixin

    class CompactSFTTrainer(CompactLossMixin, SFTTrainer):
        pass

    rows = [tokenize_chat(tokenizer, ex["messages"]) for ex in job.examples]
    held_out = [tokenize_chat(tokenizer, ex["messages"]) for ex in job.eval_examples]
    if held_out:
        args = {
            **args,
            "eval_strategy": "steps",
            "eval_steps": job.eval_every or job.max_steps,
            "eval_on_start": True,  # the base model's held-out loss: the curve's step 0
            "per_device_eval_batch_size": 1,
            "prediction_loss_only": True,  # the compact loss builds no logits
        }
    context = _context_tokens(model)
    config = SFTConfig(
        **args,
        max_length=context,  # longer chats keep their start (they restart before 12k chars)
        truncation_mode="keep_start",
        packing=False,
        dataset_num_proc=None,
    )
    return (CompactSFTTrainer if compact else SFTTrainer)(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        eval_dataset=Dataset.from_list(held_out) if held_out else None,
        processing_class=tokenizer,
        peft_config=peft,
    )


def _context_tokens(model: Any) -> int:
    config = model.config
    return int(
        getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", 2048)
    )
