"""Serve the operator API and admin with gunicorn on PORT, printing the start line once bound.

Each of gunicorn's workers reads requests on an asyncio loop and runs the application on
`threads` threads (superdispatch.gunicorn_worker, superdispatch.front): a slow client costs a
socket, not a thread, and a request whose answer has not begun within `timeout` is answered
503 and its worker replaced."""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.management.base import BaseCommand
from django.core.wsgi import get_wsgi_application
from gunicorn.app.base import BaseApplication

from superdispatch.store_version import refuse_a_newer_database

WORKER = "superdispatch.gunicorn_worker.Worker"  # uvicorn's loop in front; refusals in the error shape


class _Gunicorn(BaseApplication):
    def __init__(self, options: dict, start_line: str):
        self.options = options
        self.start_line = start_line
        super().__init__()

    def load_config(self):
        for key, value in self.options.items():
            self.cfg.set(key, value)
        line = self.start_line
        self.cfg.set("when_ready", lambda server: print(line, file=sys.stderr, flush=True))

    def load(self):
        return get_wsgi_application()


class Command(BaseCommand):
    help = "Serve SuperDispatch's operator API and admin console on PORT."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="address to bind (0.0.0.0 in a container)")
        parser.add_argument("--workers", type=int, default=2)

    def handle(self, *args, host: str, workers: int, **options):
        cfg = settings.SUPERDISPATCH
        refuse_a_newer_database()  # here, before gunicorn forks its workers
        _Gunicorn(
            {
                "bind": f"{host}:{cfg.port}",
                "workers": workers,
                "threads": 4,
                "worker_class": WORKER,
                "accesslog": None,
                "errorlog": "-",
                "loglevel": "warning",
                "timeout": 60,
                # An idle kept-alive connection costs a socket, not a thread: kept 5 s (not
                # gunicorn's 2), a client pausing between calls reuses it rather than racing
                # its close and reading a reset.
                "keepalive": 5,
            },
            cfg.start_line,
        ).run()
