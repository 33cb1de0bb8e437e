"""The reconciler: resume runs that stopped making progress, so no run is ever stuck.

It runs periodically in every worker (a timer thread started when the worker is ready;
claims are exclusive, so several workers reconciling at once resume a run only once) and
in the embedded web process, where it also runs at start-up: a restarted web process
resumes the sweeps and episodes its predecessor left behind.
"""

from __future__ import annotations

import contextlib
import logging
import threading

from django.conf import settings
from django.db import close_old_connections, connections

from procurement.services import approvals, human_seat, recovery
from workers.dispatch import enqueue

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


DISPATCH_GRACE_S = 10.0  # a queued run with no message after this was never sent, or lost


def _live_runs(stall_s: float) -> set[recovery.RunRef]:
    if settings.TASK_RUNNER == "thread":
        from workers.inprocess import get_runner

        return get_runner().run_refs()
    from workers.broker import runs_with_messages

    return runs_with_messages(taken_within_s=stall_s)


def reconcile(*, stall_s: float | None = None) -> recovery.Recovery:
    """One pass: find stalled runs, claim each, send its task again (or close it)."""
    from workers.tasks import run_episode_task, run_sweep_task

    stall = settings.RUN_STALL_SECONDS if stall_s is None else stall_s
    grace = {"queued_grace_s": min(DISPATCH_GRACE_S, stall), "stall_s": stall}
    live = _live_runs(stall)
    done = recovery.Recovery()
    for pk, queue in recovery.stalled_episode_ids(live=live, **grace):
        if recovery.claim_stalled_episode(pk, **grace):
            enqueue(run_episode_task, pk, queue=queue)
            done.episodes_resumed.append(pk)
    done.approvals_timed_out = approvals.approvals_expire()
    for episode in human_seat.idle_seats():
        if human_seat.seat_hand_over(episode=episode):
            enqueue(run_episode_task, episode.pk, queue=episode.queue)
            done.seats_handed_over.append(episode.pk)
    resume, closed = recovery.recover_sweeps(live=live, **grace)
    for pk in resume:
        enqueue(run_sweep_task, pk)
    done.sweeps_resumed, done.sweeps_closed = resume, closed
    if done:
        log.warning("reconciler: %s", done.as_dict())
    return done


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
