"""Benchmark: what one user (or an anonymous client) can take from the service, on the
embedded default, as issue 34's red team measured it.

    .venv/bin/python -m bench.abuse [--baseline DIR] [--seats 100] [--openenv 70]

Starts daphne serving ``workers.embedded:application`` from a checkout (SQLite, the
in-memory channel layer, the in-process runner: what ``make run`` serves) on a fresh data
folder, creates four users and plays each probe against it over real HTTP and WebSocket.
``--baseline DIR`` runs the same probes first against another checkout (for example a
``git worktree`` of an earlier commit) and prints both columns side by side. The probes
speak only the public API, so they run against any version; a probe that an older or
newer version answers differently reports what it got (status codes, counts, bytes).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import http.client
import http.cookiejar
import json
import os
import re
import select
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.browser import EmbeddedSite

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "abuse-bench-password-1234"
USERS = {"alice": "analyst", "bob": "analyst", "carol": "analyst", "olga": "ops", "ada": "admin"}
# Long episodes (500-600 random decisions each), so the resume and export caps can show.
LONG_RUN = {"weeks": 104, "actions_per_week": 12, "max_steps": 2000}
SETUP = """
from django.core.management import call_command
from procurement.services.accounts import user_create
call_command("migrate", verbosity=0)
call_command("seed_presets", verbosity=0)
for name, role in {users!r}.items():
    user_create(username=name, role=role, password={password!r})
"""
TERMINAL = {"finished", "failed", "cancelled"}


@dataclass
class Figure:
    probe: str
    value: str
    unit: str


@dataclass
class Report:
    figures: list[Figure] = field(default_factory=list)

    def add(self, probe: str, value: object, unit: str) -> None:
        self.figures.append(Figure(probe, str(value), unit))
        print(f"  {probe:<58} {value!s:>14}  {unit}", flush=True)


class Server(EmbeddedSite):
    """daphne serving the embedded default from ``checkout`` (tests/browser.py)."""

    def __init__(self, checkout: Path) -> None:
        setup = SETUP.format(users=USERS, password=PASSWORD)
        super().__init__({"LOG_LEVEL": "WARNING"}, checkout=checkout, setup=setup)

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Client:
    """One logged-in user: the session cookie and CSRF token, as the pages use them."""

    def __init__(self, base: str, username: str | None = None) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        if username:
            self.login(username, PASSWORD)
            if "sessionid" not in self.cookies():
                raise RuntimeError(f"login of {username} failed")

    def login(self, username: str, password: str) -> int:
        """Log in through the login form (its CSRF token first); the answer's status."""
        _, page = self.call("GET", "/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.decode())
        form = {"username": username, "password": password}
        form["csrfmiddlewaretoken"] = token.group(1) if token else ""
        return self.call("POST", "/accounts/login/", form=form)[0]

    def cookies(self) -> dict[str, str]:
        return {c.name: c.value for c in self.jar}

    def call(
        self,
        method: str,
        path: str,
        *,
        body: object = None,
        raw: bytes | None = None,
        form: dict | None = None,
        headers: dict | None = None,
    ) -> tuple[int, bytes]:
        """One request; (status, body) with HTTP errors included, status 0 for no answer."""
        data, sent = raw, {"Referer": self.base + "/", "Origin": self.base}
        if body is not None:
            data = json.dumps(body).encode()
        if data is not None:
            sent["Content-Type"] = "application/json"
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        if "csrftoken" in self.cookies():
            sent["X-CSRFToken"] = self.cookies()["csrftoken"]
        sent.update(headers or {})
        request = urllib.request.Request(self.base + path, data=data, headers=sent, method=method)
        try:
            with self.opener.open(request, timeout=300) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
        except OSError as exc:
            return 0, str(exc).encode()

    def json(self, method: str, path: str, **kw) -> tuple[int, object]:
        status, body = self.call(method, path, **kw)
        try:
            return status, json.loads(body)
        except ValueError:
            return status, None

    def ws_headers(self) -> dict[str, str]:
        cookie = "; ".join(f"{k}={v}" for k, v in self.cookies().items())
        return {"Cookie": cookie}


def basic(username: str, password: str = PASSWORD) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def wait_status(client: Client, episode_id: int, *, timeout: float) -> tuple[str, float, float]:
    """Poll an episode until it ends; (last status, seconds queued, seconds in all)."""
    started = time.monotonic()
    status, queued = "?", None
    while time.monotonic() - started < timeout:
        _, episode = client.json("GET", f"/api/episodes/{episode_id}/")
        status = (episode or {}).get("status", "?")
        if queued is None and status != "queued":
            queued = time.monotonic() - started
        if status in TERMINAL:
            break
        time.sleep(0.25)
    waited = time.monotonic() - started
    return status, waited if queued is None else queued, waited


def start(client: Client, scenario: str, policy: str, **extra) -> tuple[int, dict]:
    status, episode = client.json(
        "POST", "/api/episodes/", body={"scenario": scenario, "policy": policy, **extra}
    )
    return status, episode if isinstance(episode, dict) else {}


def statuses(codes: list[int]) -> str:
    return " ".join(f"{code}x{n}" for code, n in sorted(Counter(codes).items()))


# ----------------------------------------------------------------------------------- probes


def probe_worker_time(server: Server, report: Report, *, paced: int) -> None:
    """Two paced episodes of one user, then another user's rule episode: how long the
    second user waits for a worker (the embedded default has one rule lane)."""
    alice, bob = Client(server.url, "alice"), Client(server.url, "bob")
    for _ in range(paced):
        start(alice, "bilateral", "expert", step_delay=2.0)
    time.sleep(0.5)
    code, episode = start(bob, "bilateral", "expert")
    if code != 201:
        report.add("another user's rule episode beside paced ones", f"HTTP {code}", "")
        return
    status, queued, waited = wait_status(bob, episode["id"], timeout=300)
    report.add(
        f"another user's rule episode beside {paced} paced ones: done in",
        f"{waited:.1f}",
        f"s ({status}; {queued:.1f} s of it queued)",
    )


def probe_seats(server: Server, report: Report, *, seats: int) -> int | None:
    """One analyst opens ``seats`` human seats at once; returns one opened seat's id."""
    alice = Client(server.url, "alice")
    codes, first = [], None
    started = time.monotonic()
    for _ in range(seats):
        code, episode = start(alice, "bilateral", "human")
        codes.append(code)
        if code == 201 and first is None:
            first = episode["id"]
    report.add(
        f"human seats one analyst opened of {seats} asked",
        codes.count(201),
        f"in {time.monotonic() - started:.1f} s ({statuses(codes)})",
    )
    return first


def move(price: object, step: int, message: str = "") -> dict:
    action = {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01"}
    return {"action": {**action, "price": price, "message": message}, "step": step}


def probe_seat_moves(server: Server, report: Report, episode_id: int | None) -> None:
    """Six identical moves at once; a lone surrogate; a price of 10^400; then every read."""
    if episode_id is None:
        report.add("seat moves", "no seat", "")
        return
    alice = Client(server.url, "alice")
    path = f"/api/episodes/{episode_id}/"
    _, state = alice.json("GET", f"{path}state/?step=-1")
    reference = ((state or {}).get("suppliers") or [{}])[0].get("list_prices") or {}
    price = round(float(next(iter(reference.values()), 20.0)) * 0.8, 2)
    codes: list[int] = []
    gate = threading.Barrier(6)

    def send() -> None:
        gate.wait()
        codes.append(alice.call("POST", f"{path}act/", body=move(price, 0))[0])

    threads = [threading.Thread(target=send) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    _, page = alice.json("GET", f"{path}decisions/")
    stored = (page or {}).get("count", "?") if isinstance(page, dict) else "?"
    report.add("identical moves sent at once: stored of 6", stored, f"({statuses(codes)})")
    step = stored if isinstance(stored, int) else 1
    raw = json.dumps(move(price, step)).replace('"message": ""', '"message": "\\ud800"')
    code, _ = alice.call("POST", f"{path}act/", raw=raw.encode())
    report.add("move with a lone surrogate in its message", f"HTTP {code}", "")
    for written in ("1e400", "1" + "0" * 400):
        raw = json.dumps(move(price, step)).replace(str(price), written)
        code, _ = alice.call("POST", f"{path}act/", raw=raw.encode())
        report.add(f"move with a price of 10^400 written {written[:5]}..", f"HTTP {code}", "")
    reads = [f"{path}", f"{path}decisions/", f"{path}state/?step=0", f"/episodes/{episode_id}/"]
    codes = [alice.call("GET", read)[0] for read in reads]
    report.add("reads of that episode afterwards (4 endpoints)", statuses(codes), "")


def probe_openenv(server: Server, report: Report, *, calls: int) -> None:
    """``calls`` OpenEnv sessions created over plain HTTP (MCP ``session/create``) by one
    user and never used again, then a WebSocket session by another user."""
    codes = []
    carol = Client(server.url)  # Basic auth: how a script reaches OpenEnv
    create = {"jsonrpc": "2.0", "id": 1, "method": "openenv/session/create", "params": {}}
    started = time.monotonic()
    for _ in range(calls):
        code, reply = carol.json("POST", "/openenv/mcp", body=create, headers=basic("carol"))
        codes.append(code if isinstance(reply, dict) and "result" in reply else -code)
    report.add(
        f"OpenEnv sessions one user holds after {calls} HTTP creates",
        sum(code > 0 for code in codes),
        f"in {time.monotonic() - started:.1f} s ({statuses(codes)}; < 0: refused)",
    )

    async def session() -> str:
        import websockets

        url = server.url.replace("http", "ws") + "/openenv/ws"
        try:
            async with websockets.connect(url, additional_headers=basic("bob")) as ws:
                await ws.send(json.dumps({"type": "reset", "data": {"scenario": "bilateral"}}))
                reply = json.loads(await asyncio.wait_for(ws.recv(), 60))
                return reply.get("type", "?") + (
                    f" {reply['data'].get('code')}" if reply.get("type") == "error" else ""
                )
        except Exception as exc:  # a refused handshake or a close: what the user sees
            return type(exc).__name__

    report.add("then another user's OpenEnv WebSocket session", asyncio.run(session()), "")


def probe_resume(server: Server, report: Report, episode_id: int, *, resumes: int) -> None:
    """``resumes`` "resume from the start" messages on one finished episode's stream."""
    olga = Client(server.url, "olga")

    async def flood() -> tuple[int, int]:
        import websockets

        url = server.url.replace("http", "ws") + f"/ws/episodes/{episode_id}/"
        received = messages = 0
        async with websockets.connect(
            url, additional_headers=olga.ws_headers(), origin=server.url, max_size=2**28
        ) as ws:
            await ws.recv()  # the snapshot
            for _ in range(resumes):
                await ws.send(json.dumps({"type": "resume", "after_step": -1}))
            while True:
                try:
                    frame = await asyncio.wait_for(ws.recv(), 3)
                except (TimeoutError, Exception):
                    break
                received += len(frame)
                messages += 1
        return received, messages

    received, messages = asyncio.run(flood())
    report.add(
        f"bytes sent for {resumes} stream resumes of one episode",
        f"{received:,}",
        f"B in {messages} messages ({received / max(1, resumes):,.0f} B per resume)",
    )


def probe_export(server: Server, report: Report) -> None:
    olga = Client(server.url, "olga")
    started = time.monotonic()
    code, body = olga.call("GET", "/api/datasets/export/?format=jsonl")
    report.add(
        "bytes of one dataset export request",
        f"{len(body):,}",
        f"B (HTTP {code}, {time.monotonic() - started:.1f} s)",
    )


def probe_cross_site(server: Server, report: Report) -> None:
    """A browser's cached Basic credentials sent by a form on another site."""
    anonymous = Client(server.url)
    before = anonymous.json("GET", "/api/episodes/", headers=basic("olga"))[1] or {}
    headers = {**basic("olga"), "Origin": "http://evil.example", "Referer": "http://evil.example/"}
    code, _ = anonymous.call(
        "POST",
        "/api/episodes/",
        body={"scenario": "bilateral", "policy": "expert"},
        headers=headers,
    )
    after = anonymous.json("GET", "/api/episodes/", headers=basic("olga"))[1] or {}
    created = after.get("count", 0) - before.get("count", 0)
    report.add("cross-site POST with Basic credentials", f"HTTP {code}", f"({created} created)")


def probe_ws_origin(server: Server, report: Report) -> None:
    """A WebSocket from the right host on another port."""
    olga = Client(server.url, "olga")

    async def connect() -> str:
        import websockets

        url = server.url.replace("http", "ws") + "/ws/overview/"
        try:
            async with websockets.connect(
                url, additional_headers=olga.ws_headers(), origin="http://127.0.0.1:9"
            ) as ws:
                reply = json.loads(await asyncio.wait_for(ws.recv(), 30))
                return f"accepted ({reply.get('type', '?')})"
        except Exception as exc:
            return f"refused ({type(exc).__name__})"

    report.add("WebSocket with an Origin on another port", asyncio.run(connect()), "")


def probe_body_cap(server: Server, report: Report, *, megabytes: int) -> None:
    """An anonymous POST of ``megabytes`` MB: how much the server reads before answering."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    size = megabytes * 2**20
    head = (
        f"POST /api/episodes/ HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
    )
    sock.sendall(head.encode())
    chunk, sent, started = b" " * 2**20, 0, time.monotonic()
    while sent < size:
        if select.select([sock], [], [], 0)[0]:
            break
        try:
            sock.sendall(chunk)
        except OSError:
            break
        sent += len(chunk)
    sock.settimeout(120)
    try:
        answer = sock.recv(4096).decode(errors="replace")
    except OSError:
        answer = ""
    sock.close()
    status = answer.split(" ", 2)[1] if answer.startswith("HTTP/") else "none"
    kind = "JSON" if "application/json" in answer.lower() else "not JSON"
    report.add(
        f"anonymous {megabytes} MB POST: sent before the answer",
        f"{sent / 2**20:,.0f}",
        f"MB (HTTP {status}, {kind}, {time.monotonic() - started:.1f} s)",
    )


def probe_password_guessing(server: Server, report: Report, *, guesses: int) -> None:
    """Form logins with a new username each time, from one address: the server's CPU."""
    anonymous = Client(server.url)
    cpu, codes, started = server.cpu_seconds(), [], time.monotonic()
    for i in range(guesses):
        codes.append(anonymous.login(f"guess{i}", "wrong-password"))
    used = server.cpu_seconds() - cpu
    report.add(
        f"server CPU for {guesses} logins with rotating usernames",
        f"{used:.2f}",
        f"s in {time.monotonic() - started:.1f} s ({statuses(codes)})",
    )


def long_episodes(server: Server, *, count: int) -> int:
    """``count`` long random episodes on a scenario an admin makes; the first one's id."""
    ada = Client(server.url, "ada")
    scenario = {"name": "long_run", "description": "abuse bench", "config": LONG_RUN}
    code, made = ada.json("POST", "/api/scenarios/", body=scenario)
    if code != 201:
        raise RuntimeError(f"could not make the long scenario: HTTP {code} {made}")
    ids = [start(ada, "long_run", "random")[1].get("id", 0) for _ in range(count)]
    for episode_id in ids:
        wait_status(ada, episode_id, timeout=600)
    return ids[0]


def run_probes(checkout: Path, args: argparse.Namespace) -> Report:
    print(f"\n{checkout} (git {git_head(checkout)})", flush=True)
    server, report = Server(checkout), Report()
    try:
        long_run = long_episodes(server, count=args.long_runs)
        steps: list[Callable[[], None]] = [
            lambda: probe_worker_time(server, report, paced=args.paced),
            lambda: probe_seat_moves(server, report, probe_seats(server, report, seats=args.seats)),
            lambda: probe_openenv(server, report, calls=args.openenv),
            lambda: probe_resume(server, report, long_run, resumes=args.resumes),
            lambda: probe_export(server, report),
            lambda: probe_cross_site(server, report),
            lambda: probe_ws_origin(server, report),
            lambda: probe_body_cap(server, report, megabytes=args.body_mb),
            lambda: probe_password_guessing(
                server, report, guesses=args.guesses
            ),  # last: it may lock the address out
        ]
        for step in steps:
            step()
    finally:
        server.stop()
    return report


def git_head(checkout: Path) -> str:
    out = subprocess.run(
        ["git", "-C", str(checkout), "log", "-1", "--format=%h %s"], capture_output=True, text=True
    )
    return out.stdout.strip()[:60] or "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, help="another checkout, measured first")
    parser.add_argument("--seats", type=int, default=100)
    parser.add_argument("--paced", type=int, default=2)
    parser.add_argument("--openenv", type=int, default=70)
    parser.add_argument("--resumes", type=int, default=20)
    parser.add_argument("--long-runs", type=int, default=3, help="long episodes stored first")
    parser.add_argument("--body-mb", type=int, default=100)
    parser.add_argument("--guesses", type=int, default=40)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}", flush=True)
    checkouts = [*([args.baseline.resolve()] if args.baseline else []), ROOT]
    reports = [run_probes(checkout, args) for checkout in checkouts]
    if len(reports) == 2:
        print(f"\n{'probe':<58} {'before':>24} | after")
        for before, after in zip(*(r.figures for r in reports), strict=False):
            print(f"{before.probe:<58} {before.value:>24} | {after.value}")


if __name__ == "__main__":
    main()
