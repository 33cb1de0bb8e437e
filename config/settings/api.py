"""The REST API (DRF, its OpenAPI schema) and the OpenEnv server's limits."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import env

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Basic first: an anonymous API call gets 401 with a challenge, not 403.
        "procurement.api.authentication.LockoutBasicAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "EXCEPTION_HANDLER": "procurement.api.errors.exception_handler",
    "DEFAULT_PARSER_CLASSES": [  # refuse NUL and over-deep JSON with a 400
        "procurement.api.parsers.StrictJSONParser",
        "procurement.api.parsers.StrictFormParser",
        "procurement.api.parsers.StrictMultiPartParser",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Per-user request rate on the process-local cache: generous for people, scripts and
    # bursts, a ceiling for a runaway client. Failed logins are axes' job (above).
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"user": env.str("API_USER_RATE", default="3000/minute")},
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Procurement Arena API",
    "DESCRIPTION": "Scenarios, episodes, decisions and sweeps of procurement negotiations. "
    "[Back to the dashboard](/)",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",  # no CDN: assets ship with drf-spectacular-sidecar
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}

# The most training records one GET /api/datasets/export/ streams (a record holds the
# LLM buyer's prompt twice: up to about 25 kB); the rest come by its Link rel="next".
# manage.py export_dataset is not limited.
DATASET_EXPORT_MAX_RECORDS = env.int("DATASET_EXPORT_MAX_RECORDS", default=1000)
if DATASET_EXPORT_MAX_RECORDS < 1:
    raise ImproperlyConfigured("DATASET_EXPORT_MAX_RECORDS must be at least 1.")

# --- OpenEnv (/openenv/ and manage.py serve_openenv) ------------------------------------
# WebSocket sessions at once, one environment each; the next is refused CAPACITY_REACHED.
OPENENV_MAX_SESSIONS = env.int("OPENENV_MAX_SESSIONS", default=64)
# Per user (under /openenv/, whose users log in), so that no one takes them all.
OPENENV_MAX_SESSIONS_PER_USER = env.int("OPENENV_MAX_SESSIONS_PER_USER", default=16)
# A session without a call for this long ends and frees its place (its WebSocket closes).
OPENENV_SESSION_IDLE_SECONDS = env.float("OPENENV_SESSION_IDLE_SECONDS", default=600.0)
if OPENENV_MAX_SESSIONS < 1 or OPENENV_MAX_SESSIONS_PER_USER < 1:
    raise ImproperlyConfigured("OPENENV_MAX_SESSIONS(_PER_USER) must be at least 1.")
if OPENENV_SESSION_IDLE_SECONDS <= 0:
    raise ImproperlyConfigured("OPENENV_SESSION_IDLE_SECONDS must be more than 0.")
