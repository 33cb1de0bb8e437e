"""Training buyers from the arena's own episodes: SFT on rendered episodes, GRPO on top.

Django-free (the product's ``manage.py train`` and its Celery task call this package):

- ``chat_examples``: stored episodes (scenario, seed, the buyer's actions) replayed in the
  engine and rendered with the LLM buyer's own chat (``policies/buyer_chat.py``), one
  multi-turn chat per episode, so what is trained is exactly what is played.
- ``run_training(job, hooks)``: TRL's SFTTrainer or GRPOTrainer on a local model folder,
  resumable, cancellable, writing a plain HF model folder plus ``lineage.json``.

TRL, transformers, peft and torch are imported only inside the functions that need them.
"""

from .contract import (
    LINEAGE_FILE,
    MODEL_SUBDIR,
    EpisodeSource,
    TrainHooks,
    TrainingError,
    TrainJob,
    TrainOutcome,
)
from .examples import chat_examples
from .run import run_training

__all__ = [
    "LINEAGE_FILE",
    "MODEL_SUBDIR",
    "EpisodeSource",
    "TrainHooks",
    "TrainJob",
    "TrainOutcome",
    "TrainingError",
    "chat_examples",
    "run_training",
]
