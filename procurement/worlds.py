"""The worlds stored episodes play: one place that builds a stored episode's engine.

A sealed episode (a person's seat, a rated evaluation) draws its hidden world from its
seed under the server's key (``WORLD_KEY``; negotiation/world/seeding.py), so no one who
is shown the seed, the scenario and the code can rebuild it. Every path that builds an
engine for a stored episode (a run or its resume, the human seat's replay, a replay
check, the replay boards, training-data exports) asks ``episode_world_key`` or
``episode_env``: a sealed episode played or replayed without its key would be another
world. The key itself never leaves this module's callers: no response, log line, export
or admin page carries it.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING, Any

from django.conf import settings

if TYPE_CHECKING:
    from negotiation import ProcurementEnv
    from negotiation.env import StepResult
    from negotiation.suppliers.cast import ModelBackend
    from negotiation.suppliers.recorded import RecordedReplies
    from negotiation.suppliers.seat import SeatAnswer, SupplierSeat
    from procurement.models import Episode

# What the default key is derived from SECRET_KEY for (an HMAC label: the derived key
# says nothing about SECRET_KEY, nor SECRET_KEY's other uses about it).
DERIVED_KEY_LABEL = b"procurement-arena/world-key/v1"


def server_world_key() -> bytes:
    """The server's world key: ``WORLD_KEY`` when set, else HMAC-SHA256(SECRET_KEY,
    DERIVED_KEY_LABEL)."""
    configured = getattr(settings, "WORLD_KEY", "")
    if configured:
        return configured.encode()
    secret = str(settings.SECRET_KEY).encode()
    return hmac.new(secret, DERIVED_KEY_LABEL, hashlib.sha256).digest()


def episode_world_key(episode: Episode) -> bytes | None:
    """The key ``episode``'s world is drawn under: the server's when it is sealed, None
    (a public world: its seed alone decides it) otherwise."""
    return server_world_key() if episode.sealed else None


def episode_supplier_seat(
    episode: Episode, new: dict[int, SeatAnswer] | None = None
) -> SupplierSeat | None:
    """The person's seat of a supplier-seat episode, answering as they did (their stored
    answers, and ``new`` ones not yet stored), or None for other episodes. Every engine
    built for such an episode (its run, its replays, its exports) needs it: without the
    person's answers the engine would ask again."""
    seat = episode.supplier_seat
    if not seat:
        return None
    from negotiation.suppliers.seat import HUMAN_ACTOR, SeatAnswer, SupplierSeat

    stored = episode.decisions.filter(supplier_actor=HUMAN_ACTOR).values_list("step", "response")
    answers = {step: SeatAnswer.from_response(response) for step, response in stored}
    handed_over = seat.get("handed_over")
    return SupplierSeat(
        seat["supplier_id"],
        {**answers, **(new or {})},
        handed_over_at=None if handed_over is None else handed_over["step"],
    )


def episode_env(
    episode: Episode,
    *,
    llm_backend: ModelBackend | None = None,
    seat_answers: dict[int, SeatAnswer] | None = None,
) -> ProcurementEnv:
    """A fresh engine for a stored episode, reset to its first step: its pinned scenario,
    its seed and, when sealed, the server's key. ``llm_backend`` answers for its LLM
    suppliers (a replay's recorded replies); runs pass the key to ``run_episode`` with
    ``episode_world_key``. A supplier seat answers as the person did (``seat_answers``:
    answers not stored yet)."""
    from negotiation import ProcurementEnv, load_scenario

    env = ProcurementEnv(
        load_scenario(episode.scenario_snapshot),
        llm_backend=llm_backend,
        world_key=episode_world_key(episode),
        supplier_seat=episode_supplier_seat(episode, seat_answers),
    )
    env.reset(seed=episode.seed)
    return env


# What a replay reads of each stored decision, in this order (``replay_step``'s record).
REPLAY_FIELDS = ("action", "response", "supplier_actor")


def replay_env(episode: Episode) -> tuple[ProcurementEnv, RecordedReplies | None]:
    """A fresh engine to replay ``episode``'s record on, and, when language models played
    its suppliers, the recorded replies that answer for them (no model runs: a replay is
    engine time whoever played; negotiation/suppliers/recorded.py)."""
    from negotiation.suppliers.recorded import RecordedReplies

    replies = RecordedReplies() if episode.run_plan.suppliers_use_llm else None
    return episode_env(episode, llm_backend=replies), replies


def replay_step(
    env: ProcurementEnv, replies: RecordedReplies | None, record: tuple[Any, Any, Any]
) -> StepResult:
    """Play one stored decision again: ``record`` holds its ``REPLAY_FIELDS``; an LLM
    supplier answers what the record says it answered."""
    action, response, supplier_actor = record
    if replies is not None:
        replies.expect(response=response, supplier_actor=supplier_actor)
    return env.step(action)
