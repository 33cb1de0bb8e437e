"""The reconciler's loop: a daemon thread that runs the reconciliation pass
(``procurement.services.recovery.reconcile``) every RECONCILE_INTERVAL_SECONDS.

It runs in every worker (started when the worker is ready; claims are exclusive, so
several workers reconciling at once resume a run only once) and in the embedded web
process (workers.embedded), where it also runs at start-up: a restarted web process
resumes the sweeps and episodes its predecessor left behind.
"""

from __future__ import annotations

import contextlib
import logging
import threading

from django.conf import settings
from django.db import close_old_connections, connections

from procurement.services.recovery import reconcile

log = logging.getLogger(__name__)


def _release_connections() -> None:
    """Close this thread's connections, and the process's pool where one is on.

    In a prefork worker this thread lives in the parent process, and Celery closes each
    new child's inherited pool (which would end the sessions it shares with the parent):
    between passes the parent must hold no pooled connection at all.
    """
    for conn in connections.all(initialized_only=True):
        conn.close()
        if conn.settings_dict.get("OPTIONS", {}).get("pool") and hasattr(conn, "close_pool"):
            with contextlib.suppress(KeyError):
                conn.close_pool()


class Reconciler:
    """A daemon thread that reconciles every ``interval_s`` seconds."""

    def __init__(self, interval_s: float, *, first_stall_s: float | None = None) -> None:
        self.interval_s = interval_s
        self.first_stall_s = first_stall_s  # 0 at embedded start-up: nothing else runs
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="arena-reconciler", daemon=True)

    def start(self) -> Reconciler:
        self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        stall = self.first_stall_s
        while True:
            try:
                close_old_connections()
                reconcile(stall_s=stall)
            except Exception:  # an outage: try again next time
                log.warning("reconciler pass failed", exc_info=True)
            finally:
                _release_connections()
            stall = None
            if self._stop.wait(self.interval_s):
                return


_reconciler: Reconciler | None = None
_lock = threading.Lock()


def start_reconciler(*, at_startup: bool = False) -> Reconciler:
    """Start this process's reconciler once (idempotent)."""
    global _reconciler
    with _lock:
        if _reconciler is None:
            _reconciler = Reconciler(
                settings.RECONCILE_INTERVAL_SECONDS, first_stall_s=0.0 if at_startup else None
            ).start()
        return _reconciler
