"""The candidates of a page of decisions, as the operator API reads them: value rows, not models.

A page of twenty decisions on a workspace of a thousand agents names twenty thousand
candidates. As model instances (`Decision.candidates`) they cost the web server most of a
page's CPU (docs/performance.md), so the API reads each page's rows in one query as plain
named tuples of the columns the record's serializers read, and leaves each mark for the reader
to stand in for (`marks.merged_by_position`), since every decision of a roll marks the same
agents.
"""

from __future__ import annotations

import json
from collections import namedtuple
from typing import Callable, Iterable, TypeVar

from django.db.models import TextField
from django.db.models.functions import Cast

from records.models import Candidate, Decision
from records.store import marks
from records.store.columns import CANDIDATE_READS

U = TypeVar("U")

# The columns CandidateSerializer reads, and `eligible` for an agent's verdict (agents.verdict).
CANDIDATE_FIELDS = ("decision_id", *dict.fromkeys(attr for attr, _ in CANDIDATE_READS), "eligible")
CandidateRow = namedtuple("CandidateRow", CANDIDATE_FIELDS)


# Read as text and decoded here, each distinct text once a read: the verdicts of a decision's
# rows are nearly all alike (every agent that passed every filter).
_FILTERS = CANDIDATE_FIELDS.index("filters")
_COLUMNS = [Cast("filters", TextField()) if f == "filters" else f for f in CANDIDATE_FIELDS]


def candidate_rows(decision_ids: Iterable[str]) -> dict[str, list[CandidateRow]]:
    """The Candidate rows of these decisions, by decision, in position order."""
    found: dict[str, list[CandidateRow]] = {}
    verdicts: dict[str, list] = {}
    rows = (
        Candidate.objects.filter(decision_id__in=list(decision_ids))
        .order_by("decision_id", "position")
        .values_list(*_COLUMNS)
    )
    for values in rows:
        text = values[_FILTERS]
        filters = verdicts.get(text)
        if filters is None:
            filters = verdicts[text] = json.loads(text)
        row = CandidateRow._make(values)._replace(filters=filters)
        found.setdefault(values[0], []).append(row)
    return found


def candidates_of(
    decision: Decision, rows: list[CandidateRow], off_set: Callable[[int, bool], U]
) -> list[CandidateRow | U]:
    """A decision's candidates in record order: its rows, and `off_set(position, capable)` for
    each candidate a mark stands for (the roll's agent at that position)."""
    return marks.merged_by_position(rows, decision.roll_marks, off_set)
