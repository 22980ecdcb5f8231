"""A pass's commits but its decisions' do not wait for PostgreSQL's disk
(`records.store.commits.pass_commits`)."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from records.store import commits
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("synchronous_commit is PostgreSQL's; SQLite's pass commits as it always did")


@pytest.mark.django_db(transaction=True)  # each write its own commit, as in a worker
def test_a_pass_writes_its_leases_without_waiting_and_its_decision_only_once_on_disk(postgres):
    w = make_world(lane())
    w.opt_in("brd_a")
    w.suite.pipeline.add_card("brd_a")
    seen: dict[str, list[str]] = {}

    def note(execute, sql, params, many, context):
        kind = (
            "decision"
            if sql.startswith('INSERT INTO "records_decision"')
            else "hold"
            if re.match(r'UPDATE "records_decision" SET "reserved_until"', sql)
            else "lease"
            if re.match(r'UPDATE "?records_board"? SET "?lease_owner', sql)
            else None
        )
        result = execute(sql, params, many, context)
        if kind:
            # What the statement's transaction will commit with, once the statement has run:
            # a decision's INSERT itself asks that its commit wait for the disk.
            with connection.cursor() as cursor:  # this wrapper's own: its sql starts otherwise
                cursor.execute("SHOW synchronous_commit")
                seen.setdefault(kind, []).append(cursor.fetchone()[0])
        return result

    with connection.execute_wrapper(note):
        summary = w.sweep()
    assert summary.holds == 1
    assert seen == {"lease": ["off", "off"], "decision": ["on"], "hold": ["off"]}, seen
    assert synchronous_commit() == "on"  # the connection as it was, for the next task


def test_the_connection_is_as_it_was_after_a_pass_that_failed(postgres):
    with pytest.raises(RuntimeError):
        with commits.pass_commits():
            assert synchronous_commit() == "off"
            raise RuntimeError("a pass that failed")
    assert synchronous_commit() == "on"
