"""Django settings for Procurement Arena.

Two runtime modes come from the environment alone (django-environ):

* embedded (nothing set): SQLite under DATA_DIR, the in-memory channel layer, and tasks run
  by a worker thread inside the web process (so their live events reach the page).
* full (DATABASE_URL and/or REDIS_URL): PostgreSQL through psycopg 3, channels-redis, and
  Celery on Redis with the queues ``cpu`` and ``gpu``.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
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


# --- secret key and hosts ---------------------------------------------------------------
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
# Served on loopback only (`make run`, docker-compose's published port): plain http stays fine.
LOCAL_ONLY = all(host in LOOPBACK_HOSTS for host in ALLOWED_HOSTS)

SECRET_KEY_MIN_LENGTH = 32
# Keys copied from examples and tutorials, compared without case or punctuation.
SECRET_KEY_PLACEHOLDERS = frozenset(
    {"changeme", "secret", "secretkey", "yoursecretkey", "replaceme", "insecure", "password"}
)
SECRET_KEY_HINT = "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'"


def _secret_key() -> str:
    """SECRET_KEY from the environment; a generated, persisted one only when embedded.

    Sessions, CSRF tokens and password-reset links are only as strong as this key, so a
    blank, placeholder or short one is refused wherever the site is reachable beyond
    loopback or runs in full mode. A known placeholder is refused in every mode.
    """
    raw = env.str("SECRET_KEY", default="")
    key = raw.strip()
    if not key:
        if not EMBEDDED:
            raise ImproperlyConfigured(
                f"SECRET_KEY must be set when DATABASE_URL or REDIS_URL is; {SECRET_KEY_HINT}"
            )
        path = DATA_DIR / "secret_key"
        if not path.exists():
            path.write_text(secrets.token_urlsafe(50))
            path.chmod(0o600)
        return path.read_text().strip()
    normalized = "".join(ch for ch in key.lower() if ch.isalnum())
    if normalized in SECRET_KEY_PLACEHOLDERS or normalized.startswith("djangoinsecure"):
        raise ImproperlyConfigured(f"SECRET_KEY is a published placeholder; {SECRET_KEY_HINT}")
    if (not EMBEDDED or not LOCAL_ONLY) and len(key) < SECRET_KEY_MIN_LENGTH:
        raise ImproperlyConfigured(
            f"SECRET_KEY must be at least {SECRET_KEY_MIN_LENGTH} characters; {SECRET_KEY_HINT}"
        )
    return raw


SECRET_KEY = _secret_key()
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# --- transport security ---------------------------------------------------------------------
# Secure by default once DEBUG is off and the site answers beyond loopback; every value can
# be overridden from the environment (e.g. SECURE_HSTS_SECONDS=300 while trying HTTPS out).
SECURE_BY_DEFAULT = not DEBUG and not LOCAL_ONLY
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=SECURE_BY_DEFAULT)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load-balancer probes often speak plain http
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31_536_000 if SECURE_BY_DEFAULT else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=SECURE_BY_DEFAULT)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=SECURE_BY_DEFAULT)
# TLS usually ends at a reverse proxy in front of daphne: trust its X-Forwarded-Proto then.
# Turn it off when clients reach daphne directly, or they could claim https themselves.
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https")
    if env.bool("SECURE_PROXY_SSL_HEADER", default=SECURE_BY_DEFAULT)
    else None
)

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
    "axes",  # failed-login lockout for the login form, the admin and API Basic auth
    "procurement",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # admin/dashboard assets under daphne
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "procurement.middleware.RejectNulMiddleware",  # before anything reads a parameter
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",  # every page unless exempted
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a lockout into its 429 page
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
        # A bounded psycopg pool per process (procurement/database.py says why).
        from procurement.database import postgres_database

        _db = postgres_database(
            _db,
            pool={
                "max_size": env.str("DB_POOL_MAX_SIZE", default=None),
                "min_size": env.str("DB_POOL_MIN_SIZE", default=None),
                "timeout": env.str("DB_POOL_TIMEOUT", default=None),
                "max_idle": env.str("DB_POOL_MAX_IDLE", default=None),
            },
            conn_max_age=env.int("CONN_MAX_AGE", default=0),
        )
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
    # The layer waits for messages with a 5 s blocking pop (BZPOPMIN). redis-py 8 reads
    # with a 5 s socket timeout by default, so an idle WebSocket consumer died with
    # "Timeout reading" after 5 quiet seconds. No read timeout: the pop bounds each wait
    # (a longer read timeout instead left cancelled receives hanging at loop shutdown).
    # core: a sorted set per consumer channel; a group message is written once per member.
    # pubsub: one PUBLISH per group message, fanned out inside each web process.
    CHANNEL_LAYER_BACKENDS = {
        "core": "channels_redis.core.RedisChannelLayer",
        "pubsub": "channels_redis.pubsub.RedisPubSubChannelLayer",
    }
    CHANNEL_LAYER = env.str("CHANNEL_LAYER", default="core")
    if CHANNEL_LAYER not in CHANNEL_LAYER_BACKENDS:
        raise ImproperlyConfigured(f"CHANNEL_LAYER must be one of {sorted(CHANNEL_LAYER_BACKENDS)}")
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": CHANNEL_LAYER_BACKENDS[CHANNEL_LAYER],
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": None,
                        "socket_connect_timeout": 5,
                        # redis-py 8 caps a pool at 100 and raises beyond: 1,000 sockets
                        # connecting at once (bench/live.py) need more group_add slots.
                        "max_connections": env.int("CHANNEL_REDIS_MAX_CONNECTIONS", default=1000),
                    }
                ],
                "prefix": env.str("CHANNEL_PREFIX", default="arena"),
            },
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
# A message a dead worker had taken comes back after the visibility timeout: matched to
# the longest chunk (SWEEP_CHUNK_CELLS LLM episodes), not Redis' default of one hour.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("VISIBILITY_TIMEOUT", 900)}
# Publishing fails fast when the broker is down: the run stays committed and queued, the
# caller gets its answer at once, and the reconciler sends the task once the broker is back.
CELERY_BROKER_CONNECTION_TIMEOUT = 2.0
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0.1,
    "interval_step": 0.2,
    "interval_max": 0.5,
}

# --- LLM runs ---------------------------------------------------------------------------
# Per user: LLM-backed single episodes queued or running at once, and LLM cells per sweep.
LLM_MAX_ACTIVE_EPISODES_PER_USER = env.int("LLM_MAX_ACTIVE_EPISODES_PER_USER", default=4)
LLM_MAX_SWEEP_CELLS_PER_USER = env.int("LLM_MAX_SWEEP_CELLS_PER_USER", default=500)

# --- OpenEnv (/openenv/ and manage.py serve_openenv) ------------------------------------
# WebSocket sessions at once, one environment each; the next is refused CAPACITY_REACHED.
OPENENV_MAX_SESSIONS = env.int("OPENENV_MAX_SESSIONS", default=64)
if OPENENV_MAX_SESSIONS < 1:
    raise ImproperlyConfigured("OPENENV_MAX_SESSIONS must be at least 1.")

# --- recovery ---------------------------------------------------------------------------
# A run (episode or sweep) that is not finished, whose heartbeat is older than this and for
# which the broker holds no message, has stopped: the reconciler resumes it. Longer than
# the slowest single decision (an LLM turn on CPU) and the slowest stored batch.
RUN_STALL_SECONDS = env.float("RUN_STALL_SECONDS", default=120.0)
# How often a worker (or the embedded runner) looks for stalled runs.
RECONCILE_INTERVAL_SECONDS = env.float("RECONCILE_INTERVAL_SECONDS", default=30.0)
# The embedded web process resumes what its predecessor left unfinished when it starts.
RECONCILE_ON_START = env.bool("RECONCILE_ON_START", default=True)
# Task retries of infrastructure errors: 2, 4, 8 ... 60 s apart, about 7 minutes in all, so a
# minute-long database or broker outage is ridden out before the reconciler is needed.
TASK_RETRY_MAX = env.int("TASK_RETRY_MAX", default=12)
CELERY_RESULT_EXPIRES = 24 * 3600
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- auth, i18n, static -----------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes counts failed logins (form, admin, API Basic auth) in the database, so every
# web process sees them in both runtime modes; a client that keeps guessing one account is
# locked out of it for the cool-off time, with a 429.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses locked-out credentials
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_COOLOFF_MINUTES", default=15))
# Per account and client address: one attacker cannot lock everybody out, nor guess on.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Refuse attempts during a lockout without recording them: axes appends each attempt's data
# to one row, which a guessing loop would otherwise grow without bound.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False  # no banner on every manage.py run; failures are still logged
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
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "procurement.staticfiles.PlotlyFinder",  # plotly's bundled JS, from the plotly package
]
WHITENOISE_USE_FINDERS = True  # serve straight from apps when collectstatic has not run

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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}
