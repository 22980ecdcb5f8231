"""The dataset read from the store: settled decisions, a chunk at a time, as schema-1 rows.

Decisions are read by keyset (created_at, id) in chunks, so a read of 100,000 decisions
holds one chunk in memory at a time, never the whole log.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Iterator

from django.db.models import Prefetch, Q, QuerySet

from learning.core.rows import SCHEMA, rows
from records.models import Candidate, Decision
from records.present import decision_json

MAX_DECISIONS = 100_000  # a read's cap, as documented
CHUNK = 500  # decisions per query: large enough to amortise a round trip, small in memory

_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def settled(since: datetime | None) -> QuerySet:
    """Settled decisions created at or after `since` (every one when None)."""
    decisions = Decision.objects.filter(outcome_status__isnull=False)
    return decisions if since is None else decisions.filter(created_at__gte=since)


def _after(decision: Decision, newest_first: bool) -> Q:
    if newest_first:
        return Q(created_at__lt=decision.created_at) | Q(
            created_at=decision.created_at, id__lt=decision.id)
    return Q(created_at__gt=decision.created_at) | Q(created_at=decision.created_at,
                                                     id__gt=decision.id)


def record_chunks(since: datetime | None, *,
                  newest_first: bool = False) -> Iterator[list[dict[str, Any]]]:
    """Settled decision records (the operator API's shape), `CHUNK` at a time, at most
    `MAX_DECISIONS`. Oldest first, or newest first; ties on createdAt are broken by id."""
    limit, chunk = MAX_DECISIONS, CHUNK  # read at call time, so a test can lower them
    order = ("-created_at", "-id") if newest_first else ("created_at", "id")
    with_candidates = Prefetch("candidates", queryset=Candidate.objects.order_by("position"))
    read = 0
    last: Decision | None = None
    while read < limit:
        page = settled(since).order_by(*order).prefetch_related(with_candidates)
        if last is not None:
            page = page.filter(_after(last, newest_first))
        size = min(chunk, limit - read)
        decisions = list(page[:size])
        if decisions:
            yield [decision_json(d, d.candidates.all()) for d in decisions]
        if len(decisions) < size:
            return  # a short chunk was the last
        read += size
        last = decisions[-1]


def jsonl(since: datetime | None) -> Iterator[bytes]:
    """The dataset as JSON lines, one row a line, one bytes piece per chunk of decisions."""
    for records in record_chunks(since):
        yield "".join(_encode(row) + "\n" for record in records for row in rows(record)).encode()


def json_document(since: datetime | None) -> Iterator[bytes]:
    """The dataset as one JSON document, streamed: `{schema, rows, decisions, truncated}`.

    `truncated` is true when settled decisions beyond the cap were left for a later read.
    """
    yield f'{{"schema":{SCHEMA},"rows":['.encode()
    first = True
    decisions = 0
    for records in record_chunks(since):
        decisions += len(records)
        encoded = [_encode(row) for record in records for row in rows(record)]
        if encoded:
            yield (("" if first else ",") + ",".join(encoded)).encode()
            first = False
    truncated = decisions == MAX_DECISIONS and settled(since).order_by(
        "created_at", "id")[MAX_DECISIONS:MAX_DECISIONS + 1].exists()
    yield f'],"decisions":{decisions},"truncated":{_encode(truncated)}}}'.encode()
