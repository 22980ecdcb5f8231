"""Shared fixtures: an authenticated API client and a clock-free record factory."""

from __future__ import annotations

import logging
import logging.config
from datetime import datetime, timedelta, timezone

import pytest

from superdispatch.settings_test import TEST_OPERATOR_TOKEN

T0 = datetime(2026, 11, 13, 10, 0, 0, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts with empty caches; pure tests (run without Django) have none."""
    from django.conf import settings

    if settings.configured:
        from django.core.cache import cache

        cache.clear()
        # The decisions' texts kept by id: a test's store is emptied, and its ids drawn again.
        from records.api.pages import WRITTEN

        WRITTEN.clear()
    yield


@pytest.fixture
def api(client):
    """The Django test client, carrying the operator token."""
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {TEST_OPERATOR_TOKEN}"
    return client


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def log_formatter(name: str) -> logging.Formatter:
    """The log formatter the settings configure under `name` (`plain` for
    SUPERDISPATCH_LOG_FORMAT=text, `json`), built as the logging configuration builds it."""
    from django.conf import settings

    return logging.config.DictConfigurator({}).configure_formatter(dict(settings.LOGGING["formatters"][name]))


@pytest.fixture
def staff(client):
    """The test client, signed in to the admin as the operator (the login's own password
    check is tested with `create_operator`)."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("create_operator", "--username", "op", "--password", "pw-for-tests-1")
    client.force_login(get_user_model().objects.get(username="op"))
    assert client.get("/admin/").status_code == 200, "the operator could not sign in"
    return client


@pytest.fixture
def fresh_learned_reading():
    """The loop's remembered model reading forgotten before and after a test."""
    from learning import runtime  # with Django set up: pure tests run without it

    runtime.reset_cache()
    yield
    runtime.reset_cache()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's, and then, on PostgreSQL, the test database's sessions that other threads
    left open (in-process Celery workers, live servers) ended before it is dropped: Django keeps
    a connection per thread, and one whose thread has ended cannot be closed from this one, so
    the drop would fail and leave the database behind. Their threads are done by now."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
