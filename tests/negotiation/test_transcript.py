from negotiation import format_transcript, run_episode


def test_transcript_is_readable_and_has_metrics():
    seen = []
    r = run_episode("medium_adversarial", "expert", 7, on_step=seen.append)
    assert len(seen) == len(r.steps) == r.metrics["steps"]
    text = format_transcript(r)
    assert "medium_adversarial" in text and "Final score" in text and "buyer_share" in text
    assert "negotiate(" in text
