"""Run sweeps in the foreground: one with --once, else one every SUPERDISPATCH_SWEEP_SECONDS."""

import time

from django.conf import settings
from django.core.management.base import BaseCommand

from superdispatch.loop import Loop, sweep


class Command(BaseCommand):
    help = "Sweep every opted-in board in the foreground and print what it did."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="one sweep, then exit")

    def handle(self, *args, once: bool, **options):
        loop = Loop.from_settings()
        while True:
            summary = sweep(loop)
            if summary.backoff_until is not None and not summary.boards:
                self.stdout.write(f"backing off until {summary.backoff_until.isoformat()}")
            else:
                self.stdout.write(f"sweep: {summary.line()}")
            if once:
                return
            time.sleep(settings.SUPERDISPATCH.sweep_seconds)
