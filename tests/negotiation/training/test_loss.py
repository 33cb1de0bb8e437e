"""The compact SFT loss (LM head at the label tokens only) is the model's own loss: the
same value and the same gradients as the full-logits cross-entropy, with LoRA too."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiation.training.loss import IGNORE, compact_loss
from tests.llm_models import build_tiny_model

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    from transformers import AutoModelForCausalLM

    folder = build_tiny_model(tmp_path_factory.mktemp(request.param) / "m", arch=request.param)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)


def batch(seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 300, (1, 40), generator=g)
    labels = torch.full_like(ids, IGNORE)
    labels[0, 12:18] = ids[0, 12:18]  # two "assistant turns" amid prompt tokens
    labels[0, 30:35] = ids[0, 30:35]
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def grads(model) -> list:
    return [p.grad.clone() for p in model.parameters() if p.grad is not None]


def test_compact_loss_equals_the_full_loss_and_its_gradients(model) -> None:
    inputs = batch()
    model.zero_grad()
    full = model(**inputs).loss
    full.backward()
    expected = grads(model)
    model.zero_grad()
    loss, stats = compact_loss(model, inputs)
    loss.backward()
    assert stats["loss_tokens"] == 11
    assert loss.item() == pytest.approx(full.item(), rel=1e-5)
    got = grads(model)
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert torch.allclose(a, b, atol=1e-6, rtol=1e-4)


def test_compact_loss_through_lora(model) -> None:
    from peft import LoraConfig, get_peft_model

    peft_model = get_peft_model(
        model, LoraConfig(r=2, target_modules="all-linear", task_type="CAUSAL_LM")
    )
    try:
        inputs = batch(1)
        loss, _ = compact_loss(peft_model, inputs)
        assert loss.item() == pytest.approx(peft_model(**inputs).loss.item(), rel=1e-5)
        loss.backward()
        lora = [p for n, p in peft_model.named_parameters() if "lora_" in n]
        assert lora and any(p.grad is not None and p.grad.abs().sum() > 0 for p in lora)
    finally:
        peft_model.unload()  # the module-scoped model goes back as it was


def test_the_sft_trainer_uses_the_compact_loss_and_logs_held_out_loss(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from negotiation.training import TrainJob
    from negotiation.training.loss import CompactLossMixin
    from negotiation.training.run import _training_args
    from negotiation.training.sft import build_trainer

    folder = build_tiny_model(tmp_path / "m", arch="llama")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)

    def chat(reply: str) -> dict:
        return {
            "messages": [
                {"role": "system", "content": "rules"},
                {"role": "user", "content": "state"},
                {"role": "assistant", "content": reply},
            ]
        }

    job = TrainJob(
        "sft",
        folder,
        tmp_path / "out",
        examples=[chat('{"action_type": "defer"}')],
        eval_examples=[chat('{"action_type": "reject"}')],
        eval_every=1,
        max_steps=2,
    )
    trainer = build_trainer(job, model, tokenizer, _training_args(job, "cpu"), None)
    assert isinstance(trainer, CompactLossMixin)
    trainer.train()
    assert trainer.state.global_step == 2
    held_out = [h for h in trainer.state.log_history if "eval_loss" in h]
    assert [h["step"] for h in held_out] == [0, 1, 2]
    assert all(h["eval_loss"] > 0 and "eval_mean_token_accuracy" in h for h in held_out)


def test_the_compact_loss_runs_in_the_trainers_precision(tmp_path: Path) -> None:
    """bf16 on: the head's logits are bfloat16 inside compute_loss (accelerate's autocast
    wraps model.forward, which the compact loss goes around)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from negotiation.training import TrainJob
    from negotiation.training.run import _training_args
    from negotiation.training.sft import build_trainer

    folder = build_tiny_model(tmp_path / "m", arch="llama")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder)
    chat = [
        {"role": "user", "content": "state"},
        {"role": "assistant", "content": '{"action_type": "defer"}'},
    ]
    job = TrainJob("sft", folder, tmp_path / "out", examples=[{"messages": chat}], max_steps=1)
    seen: list = []
    head = model.get_output_embeddings()
    head.register_forward_hook(lambda mod, args, out: seen.append(out.dtype))
    for bf16 in (True, False):
        args = {**_training_args(job, "cpu"), "bf16": bf16}
        trainer = build_trainer(job, model, tokenizer, args, None)
        batch = next(iter(trainer.get_train_dataloader()))
        trainer.compute_loss(model, trainer._prepare_inputs(batch))
    assert seen == [torch.bfloat16, torch.float32]
