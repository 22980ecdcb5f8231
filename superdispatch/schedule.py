"""Wiring the loop to Celery: beat's sweep schedule, and the listeners that enqueue tasks."""
from __future__ import annotations

import logging

from celery.signals import beat_init
from django.conf import settings
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from superdispatch.tasks import board_changed_task

log = logging.getLogger("superdispatch.loop")
SWEEP_TASK_NAME = "superdispatch sweep"
PRUNE_DELIVERIES_TASK_NAME = "superdispatch prune relay deliveries"


def ensure_sweep_schedule() -> None:
    """Register (or update) the periodic sweep from SUPERDISPATCH_SWEEP_SECONDS; beat and the
    admin read it from django-celery-beat's tables."""
    every = settings.SUPERDISPATCH.sweep_seconds
    interval, _ = IntervalSchedule.objects.get_or_create(every=every,
                                                         period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.update_or_create(
        name=SWEEP_TASK_NAME,
        defaults={"task": "superdispatch.sweep", "interval": interval, "enabled": True,
                  "description": "Settle, queue and place every opted-in board's ready cards."})


def ensure_prune_deliveries_schedule() -> None:
    """Register (or update) the hourly prune of relay delivery ids older than a day."""
    interval, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.HOURS)
    PeriodicTask.objects.update_or_create(
        name=PRUNE_DELIVERIES_TASK_NAME,
        defaults={"task": "superdispatch.prune_deliveries", "interval": interval,
                  "enabled": True,
                  "description": "Forget relay delivery ids older than a day."})


def on_migrate(**kwargs) -> None:
    ensure_sweep_schedule()
    ensure_prune_deliveries_schedule()


@beat_init.connect
def _on_beat_init(**kwargs) -> None:
    ensure_sweep_schedule()
    ensure_prune_deliveries_schedule()


def on_board_changed(sender, board_id: str, enabled: bool, **kwargs) -> None:
    """After an opt-in or opt-out commits: set its window, and look at it at once."""
    board_changed_task.delay(board_id)
