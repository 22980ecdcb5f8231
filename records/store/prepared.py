"""The statements a pass runs for nearly every card, parsed and planned once a connection.

Django sends every statement with its values written in (client-side binding), so PostgreSQL
parses and plans each one afresh: for the few a sweep runs once a card (its decision's insert,
the hold's update, the two looks at other passes' holds) planning cost more than running, the
decision table having ten indexes and more to weigh (docs/performance.md). A cursor from here
binds its values on the server instead, and psycopg prepares its statement the first time a
connection runs it (`prepare_threshold` 0 in the settings, which reaches no other cursor:
Django's own bind on the client, and psycopg never prepares those). It is Django's cursor wrapper all the
same, so its queries are logged and counted as any other. Elsewhere (SQLite) it is the plain
cursor.

A connection pooler between the workers and PostgreSQL must keep prepared statements: PgBouncer
1.21 or newer with `max_prepared_statements` set, or session pooling.
"""

from __future__ import annotations

import psycopg
from django.db import connection
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper


def cursor() -> CursorWrapper:
    """A cursor whose statements are prepared once a connection (on PostgreSQL)."""
    if connection.vendor != "postgresql":
        return connection.cursor()
    connection.ensure_connection()
    raw = psycopg.Cursor(connection.connection)
    return _Logged(raw, connection) if connection.queries_logged else connection.make_cursor(raw)


class _Logged(CursorDebugWrapper):
    """Logs a statement with its values written in, as Django logs its own: psycopg keeps no
    such text of a statement it bound on the server."""

    def execute(self, sql, params=None):
        with self.debug_sql(self.db.ops.compose_sql(sql, params)):
            return CursorWrapper.execute(self, sql, params)
