from django.apps import AppConfig

from records.store.signals import sweep_finished


class RecordsConfig(AppConfig):
    name = "records"
    verbose_name = "SuperDispatch records"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Imported here, not at the top: Django imports this module while it loads the apps,
        # before any model can be imported, and the suggestions import models.
        from records.store.actions import rollups, what_if
        from records.suggestions import sync_after_sweep

        sweep_finished.connect(sync_after_sweep, dispatch_uid="records.suggestions")
        # In this order: the what-if reads which boards have decisions from the rollups.
        sweep_finished.connect(rollups.after_sweep, dispatch_uid="records.rollups")
        sweep_finished.connect(what_if.after_sweep, dispatch_uid="records.what_if")
