"""The embedded default's web process: ``daphne workers.embedded:application`` (make run).

It serves config.asgi's application and, when tasks run in this process
(TASK_RUNNER=thread), registers the in-process runner with procurement.dispatch and starts
the reconciler, which at once resumes whatever a previous web process left queued or
running (RECONCILE_ON_START), then keeps looking periodically. With Celery configured it
is config.asgi's application unchanged.
"""

from django.conf import settings

from config.asgi import application as web_application
from workers.inprocess import install_local_runner
from workers.reconciler import start_reconciler

if settings.TASK_RUNNER == "thread":
    install_local_runner()
    if settings.RECONCILE_ON_START:
        start_reconciler(at_startup=True)

application = web_application
