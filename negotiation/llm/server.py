"""A small OpenAI-compatible server for any backend of this project:

    python -m negotiation.llm.server --backend transformers --model smollm2 --port 8011

Routes: POST /v1/chat/completions, GET /v1/models, GET /health. It lets several worker
hosts share one model process (the ``openai_compatible`` backend is its client), and it
is the real server the client's tests run against. Each HTTP request waits in its own
thread; one batcher thread collects the requests that arrive within a few milliseconds of
each other and answers them with ONE ``backend.generate``, so concurrent clients get
batched decoding as they would from vLLM's server. Only the standard library serves HTTP:
this runs beside Django, never inside it.
"""

from __future__ import annotations

import argparse
import json
import logging
import queue
import threading
import time
from concurrent.futures import Future
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import ValidationError

from .backend import ChatRequest, ChatResult, LLMBackend
from .openai_wire import Completion, CompletionRequest, error_body
from .results import describe, problems

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 4 * 1024 * 1024


class Batcher:
    """Queue of pending requests, drained by one thread into batched generate calls."""

    def __init__(self, backend: LLMBackend, *, window_s: float, max_batch: int) -> None:
        self.backend = backend
        self.window_s = window_s
        self.max_batch = max_batch
        self._pending: queue.Queue[tuple[ChatRequest, Future[ChatResult]]] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="llm-batcher", daemon=True)
        self._thread.start()

    def submit(self, request: ChatRequest) -> Future[ChatResult]:
        future: Future[ChatResult] = Future()
        self._pending.put((request, future))
        return future

    def _run(self) -> None:
        while True:
            batch = [self._pending.get()]
            deadline = time.monotonic() + self.window_s
            while len(batch) < self.max_batch:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    batch.append(self._pending.get(timeout=remaining))
                except queue.Empty:
                    break
            try:
                results = self.backend.generate([request for request, _ in batch])
            except Exception as exc:  # a backend bug must not kill the batcher
                log.exception("generate failed for a batch of %d", len(batch))
                for _, future in batch:
                    future.set_exception(exc)
                continue
            for (_, future), result in zip(batch, results, strict=True):
                future.set_result(result)


def make_server(
    backend: LLMBackend,
    *,
    model_name: str,
    host: str = "127.0.0.1",
    port: int = 8011,
    window_s: float = 0.005,
    max_batch: int = 64,
) -> ThreadingHTTPServer:
    batcher = Batcher(backend, window_s=window_s, max_batch=max_batch)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the client reuses its connections

        def do_GET(self) -> None:
            if self.path == "/health":
                stats = backend.stats  # how well concurrent requests were batched
                self._send(200, {"status": "ok", "calls": stats.calls, "requests": stats.requests})
            elif self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": model_name, "object": "model"}]})
            else:
                self._send(404, error_body(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            if self.path != "/v1/chat/completions":
                self._send(404, error_body(f"no route {self.path}", "not_found"))
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self._send(413, error_body(f"body over {MAX_BODY_BYTES} bytes"))
                return
            try:
                request = CompletionRequest.model_validate_json(self.rfile.read(length)).to_chat()
            except ValidationError as exc:
                self._send(400, error_body(problems(exc, "body")))
                return
            except ValueError as exc:
                self._send(400, error_body(str(exc)))
                return
            try:
                result = batcher.submit(request).result()
            except Exception as exc:
                self._send(500, error_body(describe(exc), "server_error"))
                return
            if not result.ok:  # this request could not be served (e.g. too long, bad schema)
                self._send(422, error_body(result.error or "generation failed"))
                return
            self._send(200, Completion.from_result(result, model_name).model_dump(mode="json"))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s " + format, self.address_string(), *args)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def _option(text: str) -> tuple[str, Any]:
    """``key=value``; the value is read as JSON when it parses (numbers, booleans)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def main(argv: list[str] | None = None) -> None:
    from .registry import BACKENDS, get_backend

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="transformers")
    parser.add_argument("--model", default="smollm2", help="smollm2 or a local model folder")
    parser.add_argument("--option", type=_option, action="append", default=[], metavar="K=V")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--batch-window-ms", type=float, default=5.0)
    parser.add_argument("--max-batch", type=int, default=64)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        backend = get_backend(args.backend, args.model, **dict(args.option))
    except ValueError as exc:
        parser.error(str(exc))
    server = make_server(
        backend,
        model_name=args.model or "smollm2",
        host=args.host,
        port=args.port,
        window_s=args.batch_window_ms / 1000,
        max_batch=args.max_batch,
    )
    log.info("serving %s %s on http://%s:%d/v1", args.backend, args.model, args.host, args.port)
    print(f"ready http://{args.host}:{args.port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        backend.close()


if __name__ == "__main__":
    main()
