"""Greedy decoding on a llama-cpp-python model, the grammar checked on the pick first.

llama-cpp-python's sampler chain hands the grammar every token of the vocabulary at every
step (SmolLM2: 49,152) before the greedy pick. Here the unconstrained argmax is offered to
the grammar alone, and the whole vocabulary is masked only when the grammar refuses it
(llama.cpp's own ``common_sampler`` does the same). The reply is the same token for token:
if the grammar admits the best token of all, it is also the best admitted one (ties go
to the lowest id either way, as llama.cpp's greedy sampler breaks them).

The prompt starts from the tokens the context already holds (their longest common
prefix, less the last prompt token when the whole prompt is there: its logits pick the
first reply token), as ``Llama.generate`` does; only the rest is evaluated.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np


@dataclass(frozen=True, slots=True)
class Greedy:
    tokens: list[int]  # the reply, without its end token
    finish: Literal["stop", "length"]
    reused: int  # prompt tokens the context already held (not evaluated)


class GreedyDecoder:
    """One model's greedy loop; ``run`` is called once per request, one at a time."""

    def __init__(self, llm: Any) -> None:
        import llama_cpp

        self.llm = llm
        self.vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self.n_vocab = llm.n_vocab()
        self._all = (llama_cpp.llama_token_data * self.n_vocab)()  # the whole vocabulary
        self._all_view = np.ctypeslib.as_array(self._all)
        self._one = (llama_cpp.llama_token_data * 1)()

    def run(
        self, prompt: Sequence[int], *, grammar: str | None, max_tokens: int, stop: Sequence[str]
    ) -> Greedy:
        import llama_cpp

        reused = self._start(prompt)
        constraint = None
        if grammar is not None:
            constraint = llama_cpp.llama_sampler_init_grammar(
                self.vocab, grammar.encode("utf-8"), b"root"
            )
            if not constraint:
                raise ValueError("llama.cpp could not parse the grammar")
        stops = [s.encode("utf-8") for s in stop]
        tokens: list[int] = []
        try:
            while True:
                token = self._pick(constraint)
                if llama_cpp.llama_vocab_is_eog(self.vocab, token):
                    return Greedy(tokens, "stop", reused)
                if constraint is not None:
                    llama_cpp.llama_sampler_accept(constraint, token)
                tokens.append(token)
                if stops and any(s in self.llm.detokenize(tokens) for s in stops):
                    return Greedy(tokens, "stop", reused)
                if len(tokens) >= max_tokens:
                    return Greedy(tokens, "length", reused)
                self.llm.eval([token])
        finally:
            if constraint is not None:
                llama_cpp.llama_sampler_free(constraint)

    def _start(self, prompt: Sequence[int]) -> int:
        """Evaluates what the context lacks of ``prompt``; the tokens it kept."""
        import llama_cpp

        llm = self.llm
        live = llm.input_ids[: llm.n_tokens]
        n = min(len(live), len(prompt))
        differ = np.flatnonzero(live[:n] != np.asarray(prompt[:n], dtype=live.dtype))
        keep = min(int(differ[0]) if len(differ) else n, len(prompt) - 1)
        memory = llama_cpp.llama_get_memory(llm.ctx)
        if keep == 0 or not llama_cpp.llama_memory_seq_rm(memory, -1, keep, -1):
            llm.reset()
            keep = 0
        llm.n_tokens = keep
        llm.eval(list(prompt[keep:]))
        return keep

    def _pick(self, constraint: Any) -> int:
        import llama_cpp

        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(self.llm.ctx, -1), shape=(self.n_vocab,)
        )
        token = int(logits.argmax())
        if constraint is None or self._admits(constraint, token, float(logits[token])):
            return token
        view = self._all_view
        view["id"] = np.arange(self.n_vocab)
        view["logit"] = logits
        view["p"] = 0.0
        self._apply(constraint, self._all, self.n_vocab)
        return int(view["logit"].argmax())

    def _admits(self, constraint: Any, token: int, logit: float) -> bool:
        one = self._one
        one[0].id, one[0].logit, one[0].p = token, logit, 0.0
        self._apply(constraint, one, 1)
        return one[0].logit != float("-inf")

    @staticmethod
    def _apply(constraint: Any, data: Any, size: int) -> None:
        import llama_cpp

        array = llama_cpp.llama_token_data_array(
            ctypes.cast(data, llama_cpp.llama_token_data_p), size, -1, False
        )
        llama_cpp.llama_sampler_apply(constraint, ctypes.byref(array))
