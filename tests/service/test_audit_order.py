"""The audit trail in the order the writes committed: an entry's time is read once its write
holds the row's lock, so writes that wait for one another are timed, and so ordered, as they
commit; read in time order, each board's entries chain, one's `after` the next one's `before`.
And dismissals of one open suggestion at once: one dismissal, one entry, one `dismissedAt`.

Each test runs on SQLite (the embedded default) and, with DATABASE_URL, on PostgreSQL. A
write is held at its lock by another connection holding it (the board's row on PostgreSQL, the
database's write lock on SQLite), until the write is seen waiting for it."""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import connection, connections
from django.test import Client

from access.models import AuditEntry
from records.api import views
from records.models import Board, Suggestion
from records.store.actions.boards import do_opt_in
from superdispatch.settings_test import TEST_OPERATOR_TOKEN
from tests.support.factories import T0, make_suggestion

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

TOKEN = {"HTTP_AUTHORIZATION": f"Bearer {TEST_OPERATOR_TOKEN}"}
WAIT_AT_MOST_S = 20  # a write that never reaches its lock fails the test, it does not hang it


class Clock:
    """The views' clock: held still, moved by the test."""

    def __init__(self) -> None:
        self.now = T0 + timedelta(seconds=1)
        self.lock = threading.Lock()

    def __call__(self):
        with self.lock:
            return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(views, "timezone", SimpleNamespace(now=clock))
    return clock


@pytest.fixture(autouse=True)
def no_tasks(monkeypatch):
    from superdispatch import tasks

    monkeypatch.setattr(tasks.board_changed_task, "delay", lambda *a: None)


class HeldLock:
    """Another connection holding the lock a write of `table`'s row `pk` waits for."""

    def __init__(self, table: str, column: str, pk: str) -> None:
        settings = connection.settings_dict
        self.vendor = connection.vendor
        if self.vendor == "postgresql":
            import psycopg

            self.conn = psycopg.connect(
                dbname=settings["NAME"],
                user=settings["USER"] or None,
                host=settings["HOST"] or None,
                port=settings["PORT"] or None,
                password=settings["PASSWORD"] or None,
            )
            self.conn.execute(f"SELECT 1 FROM {table} WHERE {column} = %s FOR UPDATE", [pk])
        else:
            self.conn = sqlite3.connect(settings["NAME"], isolation_level=None, check_same_thread=False)
            self.conn.execute("BEGIN IMMEDIATE")
        HELD.append(self)

    def waiting(self, threads: list[threading.Thread]) -> bool:
        """Whether every one of these threads' writes is waiting for the lock."""
        if self.vendor == "postgresql":
            # Inside this connection's transaction, the activity view is read once unless
            # its snapshot is cleared.
            self.conn.execute("SELECT pg_stat_clear_snapshot()")
            (count,) = self.conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            ).fetchone()
            return count >= len(threads)
        frames = sys._current_frames()
        return all(_in_begin(frames.get(t.ident)) for t in threads)

    def wait_for(self, threads: list[threading.Thread]) -> None:
        deadline = time.monotonic() + WAIT_AT_MOST_S
        while not self.waiting(threads):
            assert time.monotonic() < deadline, "the writes never waited for the lock"
            time.sleep(0.005)

    def release(self) -> None:
        if self.conn.closed if self.vendor == "postgresql" else self.conn is None:
            return
        self.conn.commit() if self.vendor == "postgresql" else self.conn.execute("COMMIT")
        self.conn.close()
        if self.vendor != "postgresql":
            self.conn = None


@pytest.fixture(autouse=True)
def released():
    """Every lock a test holds is freed when it ends, passed or failed, so the database can be
    emptied for the next."""
    HELD.clear()
    yield
    for lock in HELD:
        lock.release()


HELD: list[HeldLock] = []


def _in_begin(frame) -> bool:
    """SQLite: the thread is starting its write's transaction (BEGIN IMMEDIATE), which waits
    while another connection holds the database's write lock."""
    while frame is not None:
        if frame.f_code.co_name == "_start_transaction_under_autocommit":
            return True
        frame = frame.f_back
    return False


def _in_thread(answers: list, method: str, path: str) -> threading.Thread:
    def call():
        try:
            answers.append(Client().generic(method, path, **TOKEN))
        finally:
            connections.close_all()  # this thread's own connection

    thread = threading.Thread(target=call)
    thread.start()
    return thread


def _join(threads) -> None:
    for thread in threads:
        thread.join(timeout=WAIT_AT_MOST_S)
        assert not thread.is_alive()


def _board_lock() -> HeldLock:
    return HeldLock(Board._meta.db_table, "board_id", "brd_a")


def walk(entries: list[AuditEntry]) -> list[str]:
    """Where the board's chain breaks, read in time order: an entry whose before is not the
    after of the one before it."""
    broken, state = [], None
    for entry in entries:
        before = None if entry.before is None else entry.before.get("enabled")
        if before != state:
            broken.append(f"{entry.action} at {entry.at}: before {before}, was {state}")
        state = entry.after["enabled"]
    return broken


def _board_trail() -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(target="brd_a").order_by("at", "id"))


def test_a_write_that_waited_for_the_boards_lock_is_timed_when_it_got_it(clock):
    do_opt_in("brd_a", T0)
    held, answers = _board_lock(), []
    writer = _in_thread(answers, "DELETE", "/v1/boards/brd_a")
    held.wait_for([writer])
    clock.now = T0 + timedelta(seconds=10)  # the lock is freed at 10 s
    held.release()
    _join([writer])
    assert answers[0].status_code == 200
    (entry,) = AuditEntry.objects.filter(action="board.opt-out")
    assert entry.at == T0 + timedelta(seconds=10)
    assert Board.objects.get().updated_at == T0 + timedelta(seconds=10)


def test_forty_opt_ins_and_outs_at_once_chain_and_agree_with_the_store():
    do_opt_in("brd_a", T0)
    start, answers = threading.Barrier(40, timeout=WAIT_AT_MOST_S), []

    def call(method: str) -> None:
        try:
            client = Client()
            start.wait()
            answers.append(client.generic(method, "/v1/boards/brd_a", **TOKEN))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=call, args=("PUT" if n % 2 else "DELETE",)) for n in range(40)]
    for thread in threads:
        thread.start()
    _join(threads)
    assert sorted({a.status_code for a in answers}) == [200]
    trail = _board_trail()
    assert walk(trail) == []
    assert Board.objects.get().enabled == trail[-1].after["enabled"]
    # The board's answers agree with the trail: each change the trail has, one answer made.
    assert len(trail) - 1 <= 40


def test_dismissals_of_an_open_suggestion_at_once_dismiss_it_once(clock):
    suggestion = make_suggestion()
    held = HeldLock(Suggestion._meta.db_table, "id", suggestion.id)
    answers: list = []
    path = f"/v1/suggestions/{suggestion.id}/dismiss"
    first = _in_thread(answers, "POST", path)
    held.wait_for([first])
    clock.now = T0 + timedelta(seconds=2)
    others = [_in_thread(answers, "POST", path) for _ in range(3)]
    held.wait_for([first, *others])
    clock.now = T0 + timedelta(seconds=5)
    held.release()
    _join([first, *others])
    assert [a.status_code for a in answers] == [200] * 4
    (entry,) = AuditEntry.objects.filter(action="suggestion.dismiss")
    suggestion.refresh_from_db()
    assert suggestion.dismissed_at == entry.at == T0 + timedelta(seconds=5)
    assert {a.json()["suggestion"]["dismissedAt"] for a in answers} == {entry.after["dismissedAt"]}
