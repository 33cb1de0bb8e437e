"""The buyer prompt: deterministic, what a procurement manager reads, the engine's error
shown after an invalid action, capped by dropping the oldest rounds first; the supplier
persona prompt holds the hidden state and never reaches the buyer."""

from __future__ import annotations

import json

from negotiation import ProcurementEnv, get_policy, load_scenario, run_episode
from negotiation.action_mask import valid_actions
from negotiation.action_spec import ACTION_TYPES
from negotiation.policies.buyer_chat import buyer_messages, valid_now_lines
from negotiation.policies.prompts import NEXT_JSON, TRUNCATED, narrator_messages
from negotiation.suppliers.guard import fmt_price
from tests.negotiation.llm.scripted import (
    ScriptedBackend,
    both,
    fair_supplier,
    is_supplier,
    simple_buyer,
)


def _played(preset: str = "medium_adversarial", seed: int = 3, steps: int = 10):
    env = ProcurementEnv(load_scenario(preset))
    obs = env.reset(seed=seed)
    expert = get_policy("expert", seed=seed)
    for _ in range(steps):
        obs = env.step(expert.act(obs)).observation
    return env, obs


def test_the_prompt_is_deterministic_and_reads_like_a_briefing() -> None:
    _, obs = _played()
    system, user = buyer_messages(obs)
    again = buyer_messages(obs)
    assert (system, user) == again
    text = user.content
    assert text.startswith(f"Week {obs.week} (weeks 0-{obs.weeks - 1})")
    assert f"Budget: {fmt_price(obs.budget_remaining)} left" in text
    assert "per unit still needed" in text
    for r in obs.requirements:
        assert r.id in text
        if not r.decided:
            assert f"reference {fmt_price(r.reference_price)}/{r.unit}" in text
            assert f"ceiling {fmt_price(r.ceiling_unit_price)};" in text
            assert f"by week {r.deadline_week}" in text
    assert "CRITICAL" in text
    for s in obs.suppliers:
        assert f"- {s.id} {s.name}: list price" in text
    assert text.endswith("\n".join([*valid_now_lines(valid_actions(obs)), NEXT_JSON]))
    th = next(t for t in obs.threads.values() if t.status == "open" and t.rounds)
    last = th.rounds[-1]
    assert f"r{last.round} wk{last.week}:" in text and "tells urgency" in text
    for action in ACTION_TYPES:
        assert f"- {action}:" in system.content
    assert "hedge_supplier_id" in system.content and "ONE JSON object" in system.content


def test_the_engines_error_is_shown_in_the_next_prompt() -> None:
    env = ProcurementEnv(load_scenario("medium_adversarial"))
    env.reset(seed=1)
    bad = {
        "action_type": "award_contract",
        "supplier_id": "S01",
        "requirement_id": "R01",
        "quantity": 5,
    }
    obs = env.step(bad).observation
    err = obs.last_action["error"]
    text = buyer_messages(obs)[1].content
    assert f"INVALID ({err['code']}): {err['message']}" in text
    ok = env.step({"action_type": "raise_pr", "requirement_id": "R01", "amount": 10.0})
    assert "INVALID" not in buyer_messages(ok.observation)[1].content


def test_the_cap_drops_the_oldest_rounds_first() -> None:
    _, obs = _played("bilateral_hardball", seed=2, steps=6)
    tail = "\n".join([*valid_now_lines(valid_actions(obs)), NEXT_JSON])
    full = buyer_messages(obs, max_chars=100_000)[1].content
    assert full.endswith(tail)  # what is valid now is never cut
    th = next(iter(obs.threads.values()))
    rounds = th.rounds[-3:]
    assert all(f"    r{rd.round} wk" in full for rd in rounds)
    oldest = f"    r{rounds[0].round} wk"
    newest = f"    r{rounds[-1].round} wk"
    cap = len(full) - 10  # just too long: one round has to go
    capped = buyer_messages(obs, max_chars=cap)[1].content
    assert len(capped) <= cap and capped.endswith(tail)
    assert oldest not in capped and newest in capped
    assert TRUNCATED not in capped
    small = len(tail) + 300
    tiny = buyer_messages(obs, max_chars=small)[1].content
    assert len(tiny) <= small and tiny.startswith("Week") and TRUNCATED in tiny


def test_long_episodes_stay_under_the_cap() -> None:
    backend = ScriptedBackend(both(simple_buyer, fair_supplier))
    policy = get_policy("llm", backend=backend, max_prompt_chars=2500)
    run_episode("hard_arena", policy, 5)
    chats = [r.messages for r in backend.requests]
    assert len(chats) > 20
    assert max(sum(len(m.content) for m in chat[1:]) for chat in chats) <= 2500
    assert policy.chat.restarts > 0  # the chat started again from the whole state


def test_narrator_prompt_names_the_chosen_action() -> None:
    _, obs = _played(steps=3)
    action = {
        "action_type": "negotiate",
        "supplier_id": "S02",
        "requirement_id": "R01",
        "price": 44.5,
    }
    system, user = narrator_messages(obs, action)
    assert 'Chosen action: {"action_type":"negotiate"' in user.content
    assert '"message"' in user.content and "already chosen" in system.content
    award = {"action_type": "defer"}
    assert '"message"' not in narrator_messages(obs, award)[1].content.split("Chosen")[1]


def test_the_supplier_prompt_holds_the_hidden_state_and_the_buyer_never_sees_it() -> None:
    backend = ScriptedBackend(both(simple_buyer, fair_supplier))
    cfg = load_scenario("bilateral_deceptive").model_dump()
    cfg["supplier_llm"] = {"backend": "transformers", "personas": ["deceptive"]}
    env = ProcurementEnv(cfg, llm_backend=backend)
    env.reset(seed=6)
    result = run_episode(cfg, get_policy("llm", backend=backend), 6, llm_backend=backend)
    hid = next(iter(env.world.th_hidden.values()), None)
    sup_hidden = env.world.hidden[env.world.suppliers[0].id]
    reservation = fmt_price(
        env.world.reservation_now(env.world.suppliers[0].id, env.world.requirements[0])[1]
    )
    assert hid is None  # the thread opens on the first offer; its floor is reservation_now
    supplier_prompts = [r for r in backend.requests if is_supplier(r)]
    buyer_prompts = [r for r in backend.requests if not is_supplier(r)]
    assert supplier_prompts and buyer_prompts
    first = supplier_prompts[0].messages[0].content
    # its style, stress and patience (in words), never its floor
    assert "bluff" in first and "financial stress:" in first and "patience:" in first
    assert reservation not in first and "floor price" not in first
    assert f"about {sup_hidden.patience} offers" not in first
    visible = json.dumps([s.to_dict() for s in result.steps]) + "".join(
        m.content for r in buyer_prompts for m in r.messages
    )
    assert reservation not in visible and "bluff" not in visible and "floor price" not in visible
