from django.apps import AppConfig

from records.store.signals import sweep_finished


class RecordsConfig(AppConfig):
    name = "records"
    verbose_name = "SuperDispatch records"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: Django imports this module while it loads the apps,
        # before any model can be imported, and the suggestions import models.
        from records.store.actions.rollups import after_sweep
        from records.suggestions import sync_after_sweep

        sweep_finished.connect(sync_after_sweep, dispatch_uid="records.suggestions")
        sweep_finished.connect(after_sweep, dispatch_uid="records.rollups")
