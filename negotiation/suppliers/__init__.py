"""Who sells: the rule personas (``rule``), the field of published negotiation
strategies (``field``), the LLM supplier (``llm_supplier``), and the hard-rule guard
every supplier decision passes."""
