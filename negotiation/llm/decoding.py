"""The transformers backend's own decoding loop: greedy or seeded sampling per row,
grammar masks applied in place, over ``past_key_values``, without ``generate``.

It reproduces ``generate(do_sample=False)`` with the backend's logits processors step for
step (the same positions for left-padded rows, the same float32 scores, the grammar mask
then the row's sampler, ties broken by ``argmax``), so a reply is the same token for token;
what it drops is the per-token machinery of ``generate`` (processor lists, stopping
criteria, logits over the whole prompt: only the last position's are computed).

A batch sheds its finished rows (``shrink``): ``generate`` feeds a finished row padding
until the longest reply ends, so every decode step costs the whole batch; here, once at
most ``SHRINK_AT`` of the batch still decodes, the cache, mask and positions keep only
the live rows, and only from the first column any of them attends to. A row's own
computation is unchanged (its keys, values, positions and mask), so its reply is too;
each row's keys and values are copied out when it ends (``keep``), for the conversation
cache.

Jump-forward, for a batch of one grammar-constrained row (a live episode's decision):
where the grammar forces a string (``{"action_type": "``, the ids and keys after an
action is chosen), that string, tokenized as the tokenizer writes it, is a draft that
ONE forward pass checks, speculative-decoding style. At each draft position the row's
own rule (mask, then greedy or its seeded draw) picks the token from that position's
logits; drafts are kept while they equal the pick, the first pick that differs is kept
instead and the cache is cut back to it. So the reply is what decoding one token at a
time gives (the tokens are picked from the same logits, by the same rule, in the same
order), and a draft the model would not have written costs one wasted pass, never a
different reply. Where it may differ: logits of k tokens computed in one pass can differ
from k one-token passes in the last bits (matmul blocking), so a near-tie could pick
differently, exactly as cached vs uncached prompts can.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .growing_cache import keep_rows

DRAFT_MAX = 48  # draft tokens checked in one pass (a forced run is ~30 at most here)
# A shrinking batch drops its finished rows once at most this fraction of it still decodes
# (each drop copies the live rows' cache: dropping at every finish could cost more copies
# than the steps it saves; by fractions, the copies add up to a few of the first cache).
SHRINK_AT = 0.75


@dataclass(slots=True)
class RowRule:
    """How one row picks its tokens and when it ends."""

    max_tokens: int
    temperature: float
    seed: int
    stop: tuple[str, ...]


@dataclass(slots=True)
class Decoded:
    tokens: list[list[int]]  # per row, up to and including its end token
    drafted: int  # draft tokens checked (jump-forward)
    accepted: int  # of which kept
    # per row, when asked: (keys, values) per layer [heads, tokens, head_dim] of the row's
    # prompt and every reply token but its last (the tokens fed), from its first; else ()
    caches: list[Any]


class Decoder:
    """One batch's decoding; ``run`` is called once."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        rules: Sequence[RowRule],
        grammars: Sequence[Any | None] | None,
        end_ids: set[int],
        *,
        jump_forward: bool,
        shrink: bool = False,
        keep: Sequence[bool] | None = None,
    ) -> None:
        import torch
        import xgrammar as xgr

        self.model, self.tokenizer, self.rules = model, tokenizer, rules
        self.end_ids = end_ids
        self.pad_id = tokenizer.pad_token_id
        device = model.device
        self.generators = [
            torch.Generator(device=device).manual_seed(r.seed) if r.temperature > 0 else None
            for r in rules
        ]
        # A row's grammar (None: unconstrained); rows of different schemas share a batch.
        grammars = [None] * len(rules) if grammars is None else list(grammars)
        self.matchers = [None if g is None else xgr.GrammarMatcher(g) for g in grammars]
        self.bitmask = None
        vocab = next((g.tokenizer_info.vocab_size for g in grammars if g is not None), None)
        if vocab is not None:
            self.bitmask = xgr.allocate_token_bitmask(len(rules), vocab)
        self.jump = jump_forward and len(rules) == 1 and self.matchers[0] is not None
        self.keep_logits = "logits_to_keep" in _forward_parameters(model)
        self.shrink = shrink
        self.keep = list(keep) if keep is not None else [False] * len(rules)
        self.window = max((len(s.encode()) for r in rules for s in r.stop), default=0) + 2

    # ------------------------------------------------------------------ picking
    def _pick(self, scores: Any, row: int) -> int:
        """The row's token from its float32 scores (changed in place): the grammar mask,
        then greedy or the row's seeded draw (``_RowSampler``'s rule)."""
        import torch
        import xgrammar as xgr

        matcher = self.matchers[row]
        if matcher is not None and not matcher.is_terminated():
            matcher.fill_next_token_bitmask(self.bitmask, row)
            xgr.apply_token_bitmask_inplace(scores, self.bitmask[row : row + 1].to(scores.device))
        rule = self.rules[row]
        if rule.temperature > 0:
            probs = torch.softmax(scores[0] / rule.temperature, dim=-1)
            return int(torch.multinomial(probs, 1, generator=self.generators[row]))
        return int(scores[0].argmax())

    def _accept(self, row: int, token: int) -> None:
        matcher = self.matchers[row]
        if matcher is not None and not matcher.is_terminated():
            assert matcher.accept_token(token), "the grammar refused its own pick"

    def _done(self, row: int, reply: list[int]) -> bool:
        if reply[-1] in self.end_ids or len(reply) >= self.rules[row].max_tokens:
            return True
        stops = self.rules[row].stop
        if not stops or self.matchers[row] is not None:  # schema rows end with their document
            return False
        tail = self.tokenizer.decode(reply[-self.window :], skip_special_tokens=True)
        return any(s in tail for s in stops)

    def _forward(self, ids: Any, mask: Any, positions: Any, past: Any, keep: int) -> Any:
        """float32 scores of the last ``keep`` positions, [rows, keep, vocab]."""
        extra = {"logits_to_keep": keep} if self.keep_logits else {}
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=past,
            use_cache=True,
            **extra,
        )
        return out.logits[:, -keep:].float()

    # ------------------------------------------------------------------ the loop
    def run(self, input_ids: Any, attention_mask: Any, past: Any, cached: int) -> Decoded:
        """Decode after a left-padded batch whose first ``cached`` columns are in ``past``
        (``past`` grows: it holds every reply token fed back, all but each row's last).
        With ``shrink``, ``past`` ends up holding only the rows that finished last; each
        row's own keys and values are in ``Decoded.caches`` when ``keep`` asks for them."""
        import torch

        rows = len(self.rules)
        positions = (attention_mask.cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)
        scores = self._forward(
            input_ids[:, cached:], attention_mask, positions[:, cached:], past, 1
        )
        replies: list[list[int]] = [[] for _ in range(rows)]
        done = [False] * rows
        caches: list[Any] = [None] * rows
        drafted = accepted = 0
        last = positions[:, -1:]
        live = list(range(rows))  # the batch's rows, by their index in ``rules``
        for row in range(rows):
            done[row] = self._take(scores[row : row + 1, -1], row, replies[row])
        while True:
            attention_mask, last, live = self._shed(attention_mask, last, live, done, past, caches)
            if not live:
                break
            step = [self.pad_id if done[r] else replies[r][-1] for r in live]
            draft = self._draft() if self.jump else []
            ids = torch.tensor([[*step, *draft]] if draft else [[t] for t in step])
            width = ids.shape[1]
            attention_mask = torch.cat(
                [attention_mask, attention_mask.new_ones((len(live), width))], 1
            )
            fed = last + torch.arange(1, width + 1, device=last.device)
            scores = self._forward(ids.to(input_ids.device), attention_mask, fed, past, width)
            if not draft:
                for b, row in enumerate(live):
                    if not done[row]:
                        done[row] = self._take(scores[b : b + 1, -1], row, replies[row])
                last = fed
                continue
            kept = 0
            while True:  # draft position ``kept`` predicts draft[kept]
                done[0] = self._take(scores[0:1, kept], 0, replies[0])
                if done[0] or kept == len(draft) or replies[0][-1] != draft[kept]:
                    break
                kept += 1
            drafted, accepted = drafted + len(draft), accepted + kept
            refused = len(draft) - kept
            if refused:  # their keys and values are not the reply's
                past.crop(-refused)
                attention_mask = attention_mask[:, : attention_mask.shape[1] - refused]
            last = fed[:, kept : kept + 1]
        return Decoded(replies, drafted, accepted, caches)

    def _shed(
        self,
        attention_mask: Any,
        last: Any,
        live: list[int],
        done: list[bool],
        past: Any,
        caches: list[Any],
    ) -> tuple[Any, Any, list[int]]:
        """Rows that just finished leave the batch: their keys and values are copied out
        (``keep``), and with ``shrink`` the cache, mask and positions keep only the rows
        still decoding, from the first column any of them attends to. Without ``shrink``
        a finished row stays, fed padding, until every row is done."""
        import torch

        ended = [b for b, row in enumerate(live) if done[row] and caches[row] is None]
        for b in ended:
            row = live[b]
            if self.keep[row]:
                start = int(attention_mask[b].nonzero()[0, 0])
                caches[row] = tuple(
                    (layer.keys[b, :, start:].clone(), layer.values[b, :, start:].clone())
                    for layer in past.layers
                )
            else:
                caches[row] = ()
        still = [b for b, row in enumerate(live) if not done[row]]
        if not still:
            return attention_mask, last, []
        if not self.shrink or len(still) > SHRINK_AT * len(live):
            return attention_mask, last, live
        index = torch.tensor(still, device=attention_mask.device)
        attention_mask = attention_mask.index_select(0, index)
        start = int(attention_mask.any(0).nonzero()[0, 0])
        keep_rows(past, still, start)
        return attention_mask[:, start:], last.index_select(0, index), [live[b] for b in still]

    def _take(self, scores: Any, row: int, reply: list[int]) -> bool:
        """Picks the row's next token from its last scores; True when the row is done."""
        token = self._pick(scores.clone(), row)
        self._accept(row, token)
        reply.append(token)
        return self._done(row, reply)

    def _draft(self) -> list[int]:
        """The forced continuation of the one row, as the tokenizer writes it."""
        matcher = self.matchers[0]
        assert matcher is not None
        if matcher.is_terminated():
            return []
        text = matcher.find_jump_forward_string()
        if not text:
            return []
        return self.tokenizer(text, add_special_tokens=False)["input_ids"][:DRAFT_MAX]


def _forward_parameters(model: Any) -> set[str]:
    import inspect

    return set(inspect.signature(model.forward).parameters)
