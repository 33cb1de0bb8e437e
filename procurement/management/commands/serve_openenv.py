import argparse

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from procurement.body_limit import BodyLimit
from procurement.management import arguments

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def port(text: str) -> int:
    value = arguments.integer(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is between 1 and 65535; got {text}.")
    return value


def sessions(text: str) -> int:
    value = arguments.integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1; got {text}.")
    return value


class Command(BaseCommand):
    help = (
        "Serve the arena as an OpenEnv environment (WebSocket /ws, HTTP /reset /step /state "
        "/schema /metadata /health) with uvicorn. It has no login of its own: keep it on "
        "loopback; the web app serves the same under /openenv/ behind the API's login."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=port, default=8001)
        parser.add_argument(
            "--max-sessions",
            type=sessions,
            default=None,
            help="WebSocket sessions at once (default: OPENENV_MAX_SESSIONS)",
        )

    def handle(self, *args, host, port, max_sessions, **options) -> None:
        try:  # imported here: openenv is heavy, and optional (requirements/research.txt)
            import uvicorn

            from negotiation.interfaces.openenv_server import build_app
        except ImportError as exc:
            raise CommandError(
                f"{exc}. The OpenEnv server needs: pip install -r requirements/research.txt"
            ) from None
        limit = max_sessions or settings.OPENENV_MAX_SESSIONS
        if host not in LOOPBACK:
            self.stderr.write(
                f"Warning: serving on {host} without a login; anyone who reaches it can play."
            )
        self.stdout.write(
            f"OpenEnv on http://{host}:{port} (ws /ws), at most {limit} sessions, each "
            f"ended after {settings.OPENENV_SESSION_IDLE_SECONDS:g} s without a call."
        )
        # The same cap on bodies and messages as the main site (uvicorn streams bodies to
        # the app, so the middleware alone keeps them out).
        app = BodyLimit(build_app(limit, idle_s=settings.OPENENV_SESSION_IDLE_SECONDS))
        uvicorn.run(app, host=host, port=port, log_level="info")
