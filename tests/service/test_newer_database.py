"""A build refuses a database written by a newer one: every process stops at start-up with
exit 2 and one line naming the migrations it does not know."""

import os
import socket
import sqlite3
import subprocess
import sys

import pytest
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

from superdispatch import store_version
from tests.service.test_config import GOOD, ROOT

NEWER = ("records", "9999_from_a_newer_build")
LINE = (
    "superdispatch: the database was written by a newer build "
    "(records.9999_from_a_newer_build); deploy that build or restore the store"
)


def _free_port() -> str:
    """A port nothing listens on, should a process start serving after all."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def _env(data_dir) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SUPER", "ORG_", "AGENTPOD", "TREATY", "DJANGO"))
    }
    env.update(GOOD, SUPERDISPATCH_DATA_DIR=str(data_dir), PORT=_free_port())
    env.pop("DATABASE_URL", None)  # SQLite under the data dir
    env.pop("REDIS_URL", None)
    return env


def _run(args, data_dir) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=_env(data_dir), capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def newer_store(tmp_path_factory):
    """A store migrated by this build, then marked as migrated further by a newer one."""
    data_dir = tmp_path_factory.mktemp("newer-store")
    migrated = _run(["manage.py", "migrate", "--no-input", "-v", "0"], data_dir)
    assert migrated.returncode == 0, migrated.stderr
    with sqlite3.connect(data_dir / "superdispatch.sqlite3") as db:
        db.execute(
            "INSERT INTO django_migrations (app, name, applied) VALUES (?, ?, ?)",
            (*NEWER, "2027-01-01 00:00:00"),
        )
    return data_dir


@pytest.mark.parametrize(
    "command",
    [
        ["manage.py", "migrate", "--no-input"],
        ["manage.py", "serve"],
        ["manage.py", "runserver", f"127.0.0.1:{_free_port()}"],
        ["-m", "gunicorn", "--bind", f"127.0.0.1:{_free_port()}", "superdispatch.wsgi:application"],
        ["-m", "celery", "-A", "superdispatch", "worker", "--pool", "solo"],
        ["-m", "celery", "-A", "superdispatch", "beat"],
    ],
    ids=["migrate", "serve", "runserver", "gunicorn", "worker", "beat"],
)
def test_every_process_refuses_a_database_a_newer_build_wrote(command, newer_store):
    result = _run(command, newer_store)
    assert result.returncode == 2, result.stderr[-2000:]
    ours = [line for line in result.stderr.splitlines() if line.startswith("superdispatch:")]
    assert ours == [LINE]
    with sqlite3.connect(newer_store / "superdispatch.sqlite3") as db:  # and changed nothing
        assert db.execute(
            "SELECT count(*) FROM django_migrations WHERE app = ? AND name = ?", NEWER
        ).fetchone() == (1,)


@pytest.mark.django_db
def test_only_applied_migrations_of_installed_apps_that_this_build_lacks_are_newer():
    recorder = MigrationRecorder(connection)
    assert store_version.unknown_migrations() == []
    recorder.record_applied("an_app_a_newer_build_dropped", "0001_initial")
    assert store_version.unknown_migrations() == []
    recorder.record_applied(*NEWER)
    recorder.record_applied("auth", "9999_newer_django")
    assert store_version.unknown_migrations() == ["auth.9999_newer_django", "records.9999_from_a_newer_build"]
    assert store_version.refusal(["records.9999_from_a_newer_build"]) == LINE
