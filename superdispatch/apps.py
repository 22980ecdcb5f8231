from django.apps import AppConfig
from django.db.models.signals import post_migrate


class SuperDispatchConfig(AppConfig):
    name = "superdispatch"
    verbose_name = "SuperDispatch"

    def ready(self) -> None:
        # Importing the Celery app makes it current in every Django process, so a task the
        # web process queues (a relayed card.ready) reaches the configured broker, where the
        # worker listens, not Celery's default app and its default broker.
        from superdispatch import celery  # noqa: F401

        from records import actions
        from superdispatch import schedule

        actions.board_hooks.append(schedule.board_changed)
        schedule.install_after_sweep_hooks()
        post_migrate.connect(schedule.on_migrate, sender=self)
