"""Secrets, transport security and logins: secure by default wherever the site answers
beyond loopback, every value overridable from the environment."""

from __future__ import annotations

import functools
import os
import secrets
from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured
from django.utils.functional import lazy

from config.settings.base import DATA_DIR, DEBUG, EMBEDDED, LOCAL_ONLY, env

# --- secret key -----------------------------------------------------------------------
SECRET_KEY_MIN_LENGTH = 32
# Keys copied from examples and tutorials, compared without case or punctuation.
SECRET_KEY_PLACEHOLDERS = frozenset(
    {"changeme", "secret", "secretkey", "yoursecretkey", "replaceme", "insecure", "password"}
)
SECRET_KEY_HINT = "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'"


@functools.cache
def _embedded_secret_key() -> str:
    """The embedded default's generated key, kept in DATA_DIR so sessions survive a
    restart. Made on first use, not at import; created owner-only and exclusively, so two
    processes starting at once agree on one key."""
    path = DATA_DIR / "secret_key"
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


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
        return lazy(_embedded_secret_key, str)()
    normalized = "".join(ch for ch in key.lower() if ch.isalnum())
    if normalized in SECRET_KEY_PLACEHOLDERS or normalized.startswith("djangoinsecure"):
        raise ImproperlyConfigured(f"SECRET_KEY is a published placeholder; {SECRET_KEY_HINT}")
    if (not EMBEDDED or not LOCAL_ONLY) and len(key) < SECRET_KEY_MIN_LENGTH:
        raise ImproperlyConfigured(
            f"SECRET_KEY must be at least {SECRET_KEY_MIN_LENGTH} characters; {SECRET_KEY_HINT}"
        )
    return raw


SECRET_KEY = _secret_key()
# The key that seals the worlds people and rated evaluations play (negotiation/world/
# seeding.py): never shown in a response, a log line or an export. Empty derives one from
# SECRET_KEY (procurement.worlds.server_world_key), so nothing needs setting up; set it
# before rotating SECRET_KEY, or stored sealed episodes no longer replay.
WORLD_KEY = env.str("WORLD_KEY", default="")
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

# --- logins ---------------------------------------------------------------------------
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
    "procurement.login_budget.BudgetedModelBackend",  # Django's, behind the address budget
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
# Failed password checks per client address per minute, whatever the username: then every
# login from that address is refused before a hash is made (procurement.login_budget).
# A hash costs about 0.25 s of CPU: 20 a minute keep a guesser under 10% of a core.
LOGIN_ADDRESS_FAILURE_LIMIT = env.int("LOGIN_ADDRESS_FAILURE_LIMIT", default=20)
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# --- request bodies ------------------------------------------------------------------
# The most one request (or WebSocket message) may send, refused with 413 at the ASGI edge
# before anything reads or authenticates it (procurement.body_limit). The largest
# legitimate body, a scenario config with 1,000 catalogue items and 60 named suppliers at
# their longest, is 0.6 MB (indented); the default is Django's own 2.5 MB.
REQUEST_BODY_MAX_BYTES = env.int("REQUEST_BODY_MAX_BYTES", default=2_621_440)
if REQUEST_BODY_MAX_BYTES < 1024:
    raise ImproperlyConfigured("REQUEST_BODY_MAX_BYTES must be at least 1024.")
DATA_UPLOAD_MAX_MEMORY_SIZE = REQUEST_BODY_MAX_BYTES  # Django's own check agrees (test client)
