"""The procurement negotiation engine and its policies (pure Python: no Django)."""
