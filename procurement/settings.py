"""Django settings for Procurement Arena.

Two runtime modes come from the environment alone (django-environ):

* embedded (nothing set): SQLite under DATA_DIR, the in-memory channel layer, and tasks run
  by a worker thread inside the web process (so their live events reach the page).
* full (DATABASE_URL and/or REDIS_URL): PostgreSQL through psycopg 3, channels-redis, and
  Celery on Redis with the queues ``cpu`` and ``gpu``.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").exists():  # optional local overrides
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DATA_DIR = Path(env.str("DATA_DIR", default=str(BASE_DIR / "data")))
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.bool("DEBUG", default=False)
REDIS_URL: str | None = env.str("REDIS_URL", default="") or None
DATABASE_URL: str | None = env.str("DATABASE_URL", default="") or None
EMBEDDED = DATABASE_URL is None and REDIS_URL is None


def _secret_key() -> str:
    """SECRET_KEY from the environment; a generated, persisted one only when embedded."""
    key = env.str("SECRET_KEY", default="")
    if key:
        return key
    if not EMBEDDED:
        raise ImproperlyConfigured("SECRET_KEY must be set when DATABASE_URL or REDIS_URL is.")
    path = DATA_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "daphne",  # first, so runserver is the ASGI one
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "channels",
    "procurement",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # admin/dashboard assets under daphne
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",  # every page unless exempted
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "procurement.urls"
ASGI_APPLICATION = "procurement.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------
if DATABASE_URL:
    _db = env.db_url_config(DATABASE_URL)
    if _db["ENGINE"] == "django.db.backends.postgresql":
        # Long-lived workers: reuse connections but check them before use.
        _db["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
        _db["CONN_HEALTH_CHECKS"] = True
else:
    _db = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(DATA_DIR / "arena.sqlite3"),
        # The in-process worker thread writes while requests read: WAL + a busy timeout.
        "OPTIONS": {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- channels -------------------------------------------------------------------------
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "prefix": env.str("CHANNEL_PREFIX", default="arena")},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- tasks ----------------------------------------------------------------------------
# "celery": tasks go to Celery workers through Redis. "thread": the embedded worker thread.
TASK_RUNNER = env.str("TASK_RUNNER", default="celery" if REDIS_URL else "thread")
if TASK_RUNNER not in {"celery", "thread"}:
    raise ImproperlyConfigured("TASK_RUNNER must be 'celery' or 'thread'.")
if TASK_RUNNER == "celery" and not REDIS_URL:
    raise ImproperlyConfigured("TASK_RUNNER=celery needs REDIS_URL (the broker).")

EMBEDDED_WORKER_THREADS = env.int("EMBEDDED_WORKER_THREADS", default=1)
SWEEP_CHUNK_CELLS = env.int("SWEEP_CHUNK_CELLS", default=20)  # episodes per Celery task

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = REDIS_URL or "cache+memory://"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "cpu"
CELERY_TASK_ROUTES = {"workers.gpu.*": {"queue": "gpu"}}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("VISIBILITY_TIMEOUT", 3600)}
CELERY_RESULT_EXPIRES = 24 * 3600
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- auth, i18n, static -----------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns about a missing root
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True  # serve straight from apps when collectstatic has not run

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Basic first: an anonymous API call gets 401 with a challenge, not 403.
        "rest_framework.authentication.BasicAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "EXCEPTION_HANDLER": "procurement.api.errors.exception_handler",
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Procurement Arena API",
    "DESCRIPTION": "Scenarios, episodes, decisions and sweeps of procurement negotiations.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",  # no CDN: assets ship with drf-spectacular-sidecar
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}
