"""Tasks: who runs them (Celery workers or the embedded thread), Celery's options, retries
and the reconciler's timings."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import REDIS_URL, env

# "celery": tasks go to Celery workers through Redis. "thread": the embedded worker thread.
TASK_RUNNER = env.str("TASK_RUNNER", default="celery" if REDIS_URL else "thread")
if TASK_RUNNER not in {"celery", "thread"}:
    raise ImproperlyConfigured("TASK_RUNNER must be 'celery' or 'thread'.")
if TASK_RUNNER == "celery" and not REDIS_URL:
    raise ImproperlyConfigured("TASK_RUNNER=celery needs REDIS_URL (the broker).")

# The embedded runner's two lanes (workers.inprocess): rule work (episodes, sweeps, human
# seats handed over) never waits behind a language model. The model lane plays one episode
# at a time: on CPU a batch of several episodes' turns costs about as much as those turns
# one by one, so concurrent episodes would only all finish late (docs/operations.md).
# Where batching pays (a GPU), more threads let episodes started together batch.
EMBEDDED_WORKER_THREADS = env.int("EMBEDDED_WORKER_THREADS", default=1)
EMBEDDED_LLM_THREADS = env.int("EMBEDDED_LLM_THREADS", default=1)
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
