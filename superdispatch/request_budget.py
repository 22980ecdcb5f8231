"""A web request's budget on PostgreSQL: each statement it runs is cancelled past
SUPERDISPATCH_REQUEST_STATEMENT_SECONDS (`statement_timeout`), so a request that would hold a
server thread for minutes is answered 503 (`over-budget`, common.errors) and its thread freed.

Only the web process's connections carry it, set once a connection: one opened while a request
is served, or one a request finds open without it (a stream's rows read after its view
returned). The loop and the Celery tasks open theirs without it, for a sweep or a retention pass
may legitimately run a long statement. SQLite has no such setting and is left as it is.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import connection
from django.db.backends.signals import connection_created

_serving = threading.local()  # set while this thread serves a request


def _bound(wrapper, milliseconds: int) -> None:
    with wrapper.connection.cursor() as cursor:
        cursor.execute(f"SET statement_timeout = {int(milliseconds)}")
    # Marked as bound only outside a transaction: a SET inside one is undone by its rollback.
    # A reconnection is a new object, and so unmarked.
    wrapper.statement_budget_of = None if wrapper.in_atomic_block else wrapper.connection


def _on_created(sender, connection, **kwargs) -> None:
    milliseconds = getattr(_serving, "milliseconds", None)
    if milliseconds and connection.vendor == "postgresql":
        _bound(connection, milliseconds)


class RequestBudget:
    """Middleware: every request's PostgreSQL connection carries the statement timeout."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.milliseconds = settings.SUPERDISPATCH.request_statement_seconds * 1000
        connection_created.connect(_on_created, dispatch_uid="superdispatch.request_budget")

    def __call__(self, request):
        if (
            connection.vendor == "postgresql"
            and connection.connection is not None
            and getattr(connection, "statement_budget_of", None) is not connection.connection
        ):
            _bound(connection, self.milliseconds)
        _serving.milliseconds = self.milliseconds
        try:
            return self.get_response(request)
        finally:
            _serving.milliseconds = None
