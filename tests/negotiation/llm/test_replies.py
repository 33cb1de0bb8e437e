"""Closing a JSON reply that the token limit cut: only inside a string value."""

from __future__ import annotations

import json

import pytest

from negotiation.llm.replies import close_cut_reply

TEXT = ("message", "rationale")
WHOLE = {"action_type": "negotiate", "supplier_id": "S1", "price": 12.5, "message": 'a "b" ü'}


@pytest.mark.parametrize(
    ("cut", "closed"),
    [
        ('{"rationale": "Hold the line', {"rationale": "Hold the line"}),
        ('{"rationale": "', {"rationale": ""}),
        ('{"message": "tab\\', {"message": "tab"}),  # half an escape is dropped
        ('{"message": "x\\u00', {"message": "x"}),
        ('{"message": "x\\u00e9y', {"message": "xéy"}),
        ('Sure! {"a": {"message": "deep', {"a": {"message": "deep"}}),
        ('{"a": "}{", "message": "[x', {"a": "}{", "message": "[x"}),
    ],
)
def test_a_cut_inside_a_string_value_closes_where_it_stopped(cut: str, closed: dict) -> None:
    assert json.loads(close_cut_reply(cut, TEXT)) == closed


def test_every_cut_inside_the_last_text_keeps_every_other_field() -> None:
    text = json.dumps(WHOLE)
    start = text.index('"message": "') + len('"message": "')
    for end in range(start, len(text) - 1):
        reply = json.loads(close_cut_reply(text[:end], TEXT))
        assert {k: v for k, v in reply.items() if k != "message"} == {
            k: v for k, v in WHOLE.items() if k != "message"
        }
        assert WHOLE["message"].startswith(reply["message"])


@pytest.mark.parametrize(
    "cut",
    [
        "",
        "no json here",
        '{"action_type": "nego',  # inside a value that decides
        '{"supplier_id": "S',
        '{"supplier_id": "S1", "mess',  # inside a key
        '{"price": 12.',  # inside a number
        '{"price": 12, ',  # between fields
        '{"message": ["a", "b',  # inside an array's string: not the key's own value
        '{"whole": "reply"}',  # nothing was cut
    ],
)
def test_a_cut_anywhere_else_is_not_closed(cut: str) -> None:
    assert close_cut_reply(cut, TEXT) is None
