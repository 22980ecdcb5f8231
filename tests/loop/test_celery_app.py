"""The web process queues tasks on the configured broker, not on Celery's default one."""

import os
import subprocess
import sys

from django.conf import settings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# What the webhook does: set Django up, then `.delay` a task, without importing the Celery app
# module itself (the worker does; gunicorn and manage.py never did).
WEB_PROCESS = """
import django
django.setup()
from superdispatch.tasks import place_card_task
print(place_card_task.app.main, place_card_task.app.conf.broker_url)
"""


def test_the_web_process_queues_relay_placements_on_the_configured_broker():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "superdispatch.settings_test"}
    out = subprocess.run(
        [sys.executable, "-c", WEB_PROCESS],
        env=env,
        cwd=ROOT,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
        timeout=60,
    ).stdout.split()
    assert out == ["superdispatch", settings.CELERY_BROKER_URL]
