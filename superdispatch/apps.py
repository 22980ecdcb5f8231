from django.apps import AppConfig
from django.db.models.signals import post_migrate

from records.store.signals import board_changed, sweep_finished


class SuperDispatchConfig(AppConfig):
    name = "superdispatch"
    verbose_name = "SuperDispatch"

    def ready(self) -> None:
        # Imported here, not at the top: Django imports this module while it loads the apps,
        # before any model can be imported, and these modules import models.
        # Importing the Celery app makes it current in every Django process, so a task the
        # web process queues (a relayed card.ready) reaches the configured broker, where the
        # worker listens, not Celery's default app and its default broker.
        from superdispatch import celery, schedule  # noqa: F401

        board_changed.connect(schedule.on_board_changed, dispatch_uid="superdispatch.board_changed")
        sweep_finished.connect(schedule.on_sweep_finished, dispatch_uid="superdispatch.what_if")
        sweep_finished.connect(
            schedule.on_sweep_reviews_experiments, dispatch_uid="superdispatch.experiments"
        )
        post_migrate.connect(schedule.on_migrate, sender=self)
