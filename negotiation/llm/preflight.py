"""Check a model setting before a long run starts: is the model there, is the server up?

Nothing is loaded: a local model must be a folder (or GGUF file) on this machine, and a
server must list its models (GET /models) within a short timeout. A run with a bad model would
otherwise fall back on every decision and report a rule policy's numbers as the model's.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from .models import DEFAULT_ALIASES, _is_model_folder, resolve_gguf, smollm2_gguf
from .registry import BACKENDS

CONNECT_TIMEOUT_S = 3.0


def model_problem(
    backend: str, model: str, options: dict | None = None, *, timeout_s: float = CONNECT_TIMEOUT_S
) -> str | None:
    """Why ``backend`` cannot serve ``model`` here, or None when it looks servable."""
    from pathlib import Path

    if backend not in BACKENDS:
        return f"unknown LLM backend '{backend}'; use one of {', '.join(sorted(BACKENDS))}"
    try:
        if backend == "openai_compatible":
            url = (options or {}).get("base_url") or model
            return _unreachable(url, timeout_s)
        if backend == "llamacpp":
            resolve_gguf(model)
            return None
        if model.strip().lower() in DEFAULT_ALIASES:
            smollm2_gguf()
            return None
        if not _is_model_folder(Path(model).expanduser()):
            return (
                f"model '{model}' is not a local Hugging Face folder (no config.json); use "
                "'smollm2' or a path to a saved model"
            )
    except ValueError as exc:
        return str(exc)
    return None


def _unreachable(url: str, timeout_s: float) -> str | None:
    """None when ``url`` answers GET <base>/models as an OpenAI-compatible server does."""
    import httpx

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"'{url}' is not an http(s) server URL"
    base = url.rstrip("/")
    if parts.path in ("", "/"):
        base = f"{base}/v1"
    try:
        reply = httpx.get(f"{base}/models", timeout=timeout_s)
        listed = reply.status_code < 400 and isinstance(reply.json().get("data"), list)
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        return f"server {url} is unreachable ({type(exc).__name__}: {exc})"
    if not listed:
        return f"server {url} answered GET /models with {reply.status_code}, not a model list"
    return None
