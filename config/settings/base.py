"""What every process of Procurement Arena shares: where data lives, which runtime mode
the environment selects, the installed apps, middleware, templates, static files, logging.

Two runtime modes come from the environment alone (django-environ):

* embedded (nothing set): SQLite under DATA_DIR, the in-memory channel layer, and tasks run
  by a worker thread inside the web process (so their live events reach the page).
* full (DATABASE_URL and/or REDIS_URL): PostgreSQL through psycopg 3, channels-redis, and
  Celery on Redis with the queues ``cpu`` and ``gpu``.

Importing the settings writes nothing: DATA_DIR and STATIC_ROOT are made when the app is
ready (procurement.apps), the embedded secret key on first use (config.settings.security).
"""

from __future__ import annotations

from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
if (BASE_DIR / ".env").exists():  # optional local overrides
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DATA_DIR = Path(env.str("DATA_DIR", default=str(BASE_DIR / "data")))

DEBUG = env.bool("DEBUG", default=False)
REDIS_URL: str | None = env.str("REDIS_URL", default="") or None
DATABASE_URL: str | None = env.str("DATABASE_URL", default="") or None
EMBEDDED = DATABASE_URL is None and REDIS_URL is None

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
# Served on loopback only (`make run`, docker-compose's published port): plain http stays fine.
LOCAL_ONLY = all(host in LOOPBACK_HOSTS for host in ALLOWED_HOSTS)

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

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

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
                "procurement.context_processors.viewer_role",
            ],
        },
    },
]

# --- i18n, static, logging ------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}
