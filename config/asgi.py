"""ASGI entry point of the web process (daphne): HTTP through Django, WebSockets through
Channels, /openenv/ through the OpenEnv server, all behind the request body cap.

Full mode serves this (docker-compose's web); the embedded default serves
``workers.embedded``, which adds the in-process runner and the reconciler to it.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()  # before importing anything that touches models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from config.routing import websocket_urlpatterns  # noqa: E402
from procurement import daphne_body_limit  # noqa: E402
from procurement.body_limit import BodyLimit  # noqa: E402
from procurement.openenv_mount import OpenEnvMount  # noqa: E402
from procurement.origins import SameOriginValidator  # noqa: E402
from procurement.publish import LoopBindingMiddleware  # noqa: E402

application = LoopBindingMiddleware(
    ProtocolTypeRouter(
        {
            "http": django_asgi_app,
            "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        }
    )
)
application = OpenEnvMount(application)  # /openenv/: the OpenEnv server, behind the API's login
# Outermost: an oversized body is refused before anything authenticates or reads it, and
# daphne keeps no more of it than the cap either.
application = BodyLimit(application)
daphne_body_limit.install()
