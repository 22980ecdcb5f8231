"""The statements a pass runs once a card are prepared once a connection on PostgreSQL, and
nothing else is (records/store/prepared.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from records.models import Board, Candidate, Decision
from records.store import holds
from tests.conftest import T0
from tests.support.factories import make_decision

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def test_the_per_card_looks_are_prepared_and_djangos_own_statements_are_not():
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's; elsewhere the cursor is the plain one")
    make_decision(
        board="brd_1", card="c_1", chosen="agt_a", created_at=T0, reserved_until=T0 + timedelta(seconds=60)
    )
    for card in ("c_2", "c_3", "c_4"):  # the same statement, other values
        assert holds.held_elsewhere("agt_a", "brd_1", card, T0, "pld_x")
        assert holds.holding_now(["agt_a", "agt_b"], T0) == [("agt_a", "brd_1", "c_1")]
        assert not Board.objects.filter(board_id=card).exists()
    statements = prepared_statements()
    assert sum("LIMIT 1" in s and "chosen = $1" in s for s in statements) == 1, statements
    assert sum("jsonb_array_elements_text($1::jsonb)" in s for s in statements) == 1, statements
    assert not any("records_board" in s for s in statements), statements


def test_a_prepared_statement_is_logged_with_its_values_written_in():
    with CaptureQueriesContext(connection) as queries:
        holds.held_elsewhere("agt_logged", "brd_1", "c_1", T0, "pld_x")
    assert len(queries) == 1 and "'agt_logged'" in queries[0]["sql"], queries.captured_queries


def test_a_decision_deleted_through_django_takes_its_candidates():
    """The store no longer checks a candidate's decision (records 0011): Django's own delete
    still cascades to the candidates, as retention deletes them first."""
    kept = make_decision(card="c_kept", candidates=[{"agent": "agt_a"}])
    gone = make_decision(card="c_gone", candidates=[{"agent": "agt_a"}, {"agent": "agt_b"}])
    Decision.objects.filter(pk=gone.pk).delete()
    assert list(Candidate.objects.values_list("decision_id", flat=True)) == [kept.pk]
