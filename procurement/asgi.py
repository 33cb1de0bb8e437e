"""ASGI entry point (daphne): HTTP through Django, WebSockets through Channels."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procurement.settings")
django_asgi_app = get_asgi_application()  # before importing anything that touches models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from procurement.openenv_mount import OpenEnvMount  # noqa: E402
from procurement.routing import websocket_urlpatterns  # noqa: E402
from workers.publish import LoopBindingMiddleware  # noqa: E402

application = LoopBindingMiddleware(
    ProtocolTypeRouter(
        {
            "http": django_asgi_app,
            "websocket": AllowedHostsOriginValidator(
                AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
            ),
        }
    )
)
application = OpenEnvMount(application)  # /openenv/: the OpenEnv server, behind the API's login

if settings.TASK_RUNNER == "thread" and settings.RECONCILE_ON_START:
    # Embedded: this process is the only worker. Resume at once whatever a previous web
    # process left queued or running, then keep looking periodically.
    from workers.recovery import start_reconciler

    start_reconciler(at_startup=True)
