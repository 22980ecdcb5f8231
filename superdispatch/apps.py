from django.apps import AppConfig
from django.db.models.signals import post_migrate


class SuperDispatchConfig(AppConfig):
    name = "superdispatch"
    verbose_name = "SuperDispatch"

    def ready(self) -> None:
        from records import actions
        from superdispatch import schedule

        actions.board_hooks.append(schedule.board_changed)
        schedule.install_after_sweep_hooks()
        post_migrate.connect(schedule.on_migrate, sender=self)
