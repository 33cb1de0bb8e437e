"""HTTP servers for the openai_compatible tests: the project's own model server as a real
child process, and a few misbehaving OpenAI-style servers (slow, failing, garbage) as real
HTTP servers in a thread, each on a free loopback port the system picks (two test runs
on one machine never meet)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[3]


@contextmanager
def model_server(model: Path | str, *args: str) -> Iterator[str]:
    """``python -m negotiation.llm.server`` on the transformers backend; yields its URL."""
    port = free_port()
    argv = ["--backend", "transformers", "--model", str(model), "--option", "device=cpu"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "negotiation.llm.server", *argv, "--port", str(port), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {proc.stdout.read()}")
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)
        proc.stdout.close()


Reply = tuple[int, bytes]


@contextmanager
def scripted_server(reply: Callable[[int], Reply], delay_s: float = 0.0) -> Iterator[str]:
    """An HTTP server whose n-th POST gets ``reply(n)`` after ``delay_s``; yields its URL
    (with /v1). It stands for a broken or overloaded OpenAI-style server."""
    hits = {"n": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            hits["n"] += 1
            status, body = reply(hits["n"])
            time.sleep(delay_s)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client gave up first (the timeout test)
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()


def completion(text: str) -> Reply:
    return 200, json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    ).encode()
