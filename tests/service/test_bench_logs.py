"""The benches that write a store of their own in bulk (bench/suggestions.py's day of decisions,
which bench/retention.py and bench/dashboard.py reuse) write it through the records' own
mapping to columns. A column the mapping does not give takes its field's default: a new
column must not break them, as `roll_marks` once did (a NOT NULL column written as NULL)."""

import pytest

from bench import suggestions
from records.models import Candidate, Decision
from records.store.columns import stored_row

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def test_a_column_left_out_of_a_stored_row_takes_its_fields_default():
    fields = [f.attname for f in Decision._meta.concrete_fields]
    row = dict(zip(fields, stored_row(Decision, {"id": "pld_1", "roll_marks": "c"})))
    assert (row["id"], row["roll_marks"], row["roll_id"], row["chosen"]) == ("pld_1", "c", None, None)
    row = dict(zip(fields, stored_row(Decision, {"id": "pld_2"})))
    assert row["roll_marks"] == ""


def test_the_suggestions_benchs_log_reads_back_as_decisions_with_their_candidates():
    written = suggestions.seed(400)
    assert Decision.objects.count() == 400
    assert Candidate.objects.count() == written == 400 * suggestions.CANDIDATES
    decision = Decision.objects.order_by("created_at").first()
    assert decision.roll_marks == ""
    assert len(decision.candidates) == suggestions.CANDIDATES
