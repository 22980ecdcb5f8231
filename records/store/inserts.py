"""A decision's write as plain statements: its row inserted as `save()` would, and its
candidates' rows by COPY.

A decision is made for nearly every ready card of a sweep, and its write sits on the relay's
path to the hold; what the ORM adds to these two writes cost more than the store spent on
them (docs/performance.md). Their callers (records.store.actions.decisions) keep the rules;
this module knows only how to put rows in a table.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from django.db import connection, models

from records.store import commits, prepared


def insert_row(row: models.Model, *, on_disk: bool = False) -> None:
    """INSERT a new row as `save()` would: every column, each value as its field prepares it.
    `on_disk`: the statement also makes its transaction's commit wait for the disk
    (`commits.ON_DISK`), inside `pass_commits` too.

    The ORM spent more of a card's pass building this one statement than the store spent on
    it; the statement is prepared once a connection (`prepared`)."""
    fields, sql = _insert_statement(type(row), on_disk and connection.vendor == "postgresql")
    values = [f.get_db_prep_save(f.pre_save(row, True), connection) for f in fields]
    with prepared.cursor() as cursor:
        cursor.execute(sql, values)
    row._state.adding, row._state.db = False, connection.alias


@lru_cache(maxsize=None)
def _insert_statement(model: type, on_disk: bool) -> tuple[tuple, str]:
    quote = connection.ops.quote_name
    fields = tuple(model._meta.concrete_fields)
    return fields, (
        f"INSERT INTO {quote(model._meta.db_table)} "
        f"({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})" + (f" RETURNING {commits.ON_DISK}" if on_disk else "")
    )


def insert_rows(model: type[models.Model], fields: Sequence[models.Field], rows: list[tuple]) -> None:
    """Write rows of these columns, values in `fields` order: COPY on PostgreSQL, else one
    executemany.

    Plain rows, not models through `bulk_create`: a 200-candidate decision sits on the relay's
    path to the hold, and on PostgreSQL `bulk_create` binds each column as an array that
    psycopg quotes element by element in Python, several times the cost of the write itself.
    """
    if not rows:
        return
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = ", ".join(quote(f.column) for f in fields)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            params = ", ".join(["%s"] * len(fields))
            cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({params})", rows)
