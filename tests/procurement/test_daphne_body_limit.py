"""The body cap inside daphne: a real daphne serving the embedded default answers an
oversized body with the JSON 413 while it is still being sent, and keeps none of it (its
peak memory does not grow by it)."""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import free_port, terminate, wait_port

ROOT = Path(__file__).resolve().parents[2]
BODY = 100 * 1024 * 1024  # 40 times the default cap
CHUNK = 1024 * 1024


@pytest.fixture(scope="module")
def daphne() -> Iterator[subprocess.Popen]:
    data_dir = tempfile.mkdtemp(prefix="arena-body-")
    keep = ("DATABASE_URL", "REDIS_URL", "CHANNEL_PREFIX", "DJANGO_SETTINGS_MODULE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(keep)}
    env.update(DATA_DIR=data_dir, PYTHONPATH=str(ROOT), RECONCILE_ON_START="0")
    env.setdefault("SECRET_KEY", "body-limit-test-key-not-for-production-0123456789")
    port = free_port()
    serve = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    proc = subprocess.Popen(
        [*serve, "workers.embedded:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    proc.port = port
    try:
        wait_port(port, timeout=60)
        yield proc
    finally:
        terminate(proc)
        shutil.rmtree(data_dir, ignore_errors=True)


def peak_memory_mb(proc: subprocess.Popen) -> float:
    """The process's peak resident memory so far (Linux: VmHWM)."""
    status = Path(f"/proc/{proc.pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def post(port: int, *, chunked: bool) -> tuple[int, dict, int]:
    """An anonymous POST of BODY bytes, sent until the server answers: the status and
    JSON body of the answer, and how many bytes of the body were sent before it."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        length = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {BODY}"
        head = f"POST /api/episodes/ HTTP/1.1\r\nHost: localhost\r\n{length}\r\n"
        sock.sendall(f"{head}Content-Type: application/json\r\n\r\n".encode())
        chunk, sent = b"x" * CHUNK, 0
        while sent < BODY and not select.select([sock], [], [], 0)[0]:
            sock.sendall(b"%x\r\n%s\r\n" % (CHUNK, chunk) if chunked else chunk)
            sent += CHUNK
        if chunked and sent == BODY:
            sock.sendall(b"0\r\n\r\n")
        answer = b""
        while not answer.rstrip().endswith(b"}"):
            data = sock.recv(65536)
            if not data:
                break
            answer += data
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body), sent


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_daphne_keeps_none_of_an_oversized_body(daphne, chunked) -> None:
    # Before: daphne took the whole body into memory (and a temporary file), the app copied
    # it again, then answered 401: 300 MB sent anonymously took 311 MB more memory and
    # 593 MB of temporary files.
    before = peak_memory_mb(daphne)
    status, body, sent = post(daphne.port, chunked=chunked)
    assert status == 413 and "REQUEST_BODY_MAX_BYTES" in body["detail"]
    assert sent < BODY / 4  # answered while the client was sending: it can stop
    assert peak_memory_mb(daphne) - before < BODY / (1024 * 1024) / 4
