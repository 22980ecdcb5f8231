"""The Celery app: sweeps on beat, relay placements and board looks on workers."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "superdispatch.settings")

app = Celery("superdispatch")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Read the settings now, so a worker or beat with a bad setting stops before it runs anything.
from django.conf import settings  # noqa: E402

settings.SUPERDISPATCH
app.autodiscover_tasks(["superdispatch", "records", "learning"])
