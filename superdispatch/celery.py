"""The Celery app: sweeps on beat, relay placements and board looks on workers."""

import gc
import os

from celery import Celery, signals
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "superdispatch.settings")

app = Celery("superdispatch")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Read the settings now, so a worker or beat with a bad setting stops before it runs anything.
from django.conf import settings  # noqa: E402

from superdispatch import store_version  # noqa: E402

settings.SUPERDISPATCH
app.autodiscover_tasks(["superdispatch", "records", "learning"])


@signals.worker_init.connect
@signals.beat_init.connect
def _refuse_a_newer_database(**_) -> None:
    """A worker or beat stops before it runs anything on a database a newer build wrote
    (connected before the beat hook that writes the schedule, so it runs first)."""
    store_version.refuse_a_newer_database()


@signals.worker_process_init.connect  # each pool process, once it has started
@signals.worker_ready.connect  # the worker itself (the solo and thread pools run tasks there)
def _freeze_startup_objects(**_) -> None:
    """Leave what the worker loaded at start-up out of garbage collection. A full collection
    walks every object in the process, Django, Celery and the loop included, and one falling
    inside a relayed card's pass makes that card's tail (docs/performance.md)."""
    gc.freeze()


@signals.task_prerun.connect
@signals.task_postrun.connect
def _close_old_connections(task=None, **_) -> None:
    """A task starts and ends as a request does: a connection past CONN_MAX_AGE, or one that
    failed, is closed, and a kept one is checked before its first query (CONN_HEALTH_CHECKS).
    Only on PostgreSQL does a worker keep it (`CELERY_DB_REUSE_MAX`); an eager task runs in
    its caller's transaction, which is left alone."""
    if task is not None and getattr(task.request, "is_eager", False):
        return
    close_old_connections()
