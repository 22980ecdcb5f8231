"""A build refuses a database written by a newer one.

A newer build's migrations may have changed tables this build reads and writes, so a
rollback that kept the newer store would run old code over a schema it does not know. Every
process that starts (the web server, `migrate`, the Celery worker and beat) looks first,
and stops with one line, as a bad setting does.
"""

from __future__ import annotations

import os
import sys
import threading

from django.apps import apps
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.migrations.loader import MigrationLoader


def unknown_migrations(alias: str = DEFAULT_DB_ALIAS) -> list[str]:
    """Migrations of our installed apps that the database records as applied and this build
    does not have (`app.migration`), sorted; a squashed migration's replaced names are known.

    An app this build does not install is not counted: a build that drops an app leaves its
    rows behind, and that is not a newer schema of what runs here."""
    loader = MigrationLoader(connections[alias], ignore_no_migrations=True)
    known = set(loader.disk_migrations)
    for migration in loader.disk_migrations.values():
        known.update(migration.replaces)
    installed = {config.label for config in apps.get_app_configs()}
    return sorted(
        f"{app}.{name}"
        for app, name in loader.applied_migrations
        if app in installed and (app, name) not in known
    )


def refusal(newer: list[str]) -> str:
    return (
        f"superdispatch: the database was written by a newer build ({', '.join(newer)}); "
        "deploy that build or restore the store"
    )


def refuse_a_newer_database(alias: str = DEFAULT_DB_ALIAS) -> None:
    """Stop the process with exit status 2 and one line if the database is newer than this
    build. A database that cannot be read is left for the process to meet as it would."""
    try:
        newer = unknown_migrations(alias)
    except DatabaseError:
        return
    finally:
        # A process about to fork (gunicorn, the worker's pool) must not hand this on; a
        # connection inside a transaction (a test's) is someone else's to close.
        if not connections[alias].in_atomic_block:
            connections[alias].close()
    if not newer:
        return
    # The process's own stderr: beat has already put a logger in place of sys.stderr.
    print(refusal(newer), file=sys.__stderr__ or sys.stderr, flush=True)
    if threading.current_thread() is not threading.main_thread():
        # runserver loads the application in a thread of its own, where SystemExit ends only
        # that thread; Django's runserver stops itself from there the same way.
        os._exit(2)
    raise SystemExit(2)
