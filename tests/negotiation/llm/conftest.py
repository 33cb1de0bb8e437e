"""Fixtures for the LLM backend tests: one in-process transformers backend and one server
on the session's tiny model (tests/conftest.py), for the session (loading is what the
registry caches)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from negotiation.llm import ChatMessage, ChatRequest


@pytest.fixture(scope="session")
def tiny_backend(tiny_model: Path):
    from negotiation.llm.transformers_backend import TransformersBackend

    return TransformersBackend(str(tiny_model), device="cpu")


@contextmanager
def generate_calls_of(backend) -> Iterator[list[int]]:
    """Counts a transformers backend's decoding calls (one per batch: its own loop or
    transformers' generate) and their batch sizes; each call runs for real."""
    calls: list[int] = []
    real = backend._decode

    def counted(**kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return real(**kwargs)

    backend._decode = counted
    try:
        yield calls
    finally:
        del backend._decode


def chat(text: str, **settings) -> ChatRequest:
    return ChatRequest(messages=(ChatMessage("user", text),), **settings)


@pytest.fixture(scope="session")
def tiny_server(tiny_model: Path):
    """The project's own OpenAI-compatible server on the tiny model, a real process."""
    from tests.negotiation.llm.servers import model_server

    with model_server(tiny_model, "--batch-window-ms", "20") as url:
        yield url
