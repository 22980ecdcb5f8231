"""The dataset read from the store: settled decisions, a chunk at a time, as schema-2 rows.

Decisions are read by keyset (created_at, id) in chunks, so a read of 100,000 decisions
holds one chunk in memory at a time, never the whole log.
"""

from __future__ import annotations

import json
from collections import namedtuple
from datetime import datetime
from functools import cache
from typing import Any, Callable, Iterator

from django.db.models import JSONField, Q, QuerySet, TextField
from django.db.models.functions import Cast

from learning.core.labels import CLAIMED
from learning.core.rows import SCHEMA, rows
from records.models import Candidate, Decision, Roll
from records.serializers import DecisionSerializer
from records.store import marks
from records.store.columns import CANDIDATE_READS, DECISION_READS

MAX_DECISIONS = 100_000  # a read's cap, as documented
CHUNK = 500  # decisions per query: large enough to amortise a round trip, small in memory

# Decisions and candidates are read as value rows, not model instances, and their JSON as
# text decoded here: a model instance and a JSON converter per value cost more than the rest
# of the export together. The rows carry the columns the record's serializers read, by the
# models' own names, and a decision row its candidates.
DECISION_FIELDS = tuple(dict.fromkeys(attr for attr, _ in DECISION_READS))
STORED_AS = ("roll_id", "roll_marks")  # how the decision keeps its candidates off the set
CANDIDATE_FIELDS = ("decision_id", *dict.fromkeys(attr for attr, _ in CANDIDATE_READS))
# Filter verdicts and capabilities repeat across the log: decode each distinct text once.
REPEATING = ("requires", "filters")
MEMO_SIZE = 4096

DatasetDecision = namedtuple("DatasetDecision", (*DECISION_FIELDS, *STORED_AS, "candidates"), defaults=((),))
CandidateRow = namedtuple("CandidateRow", CANDIDATE_FIELDS)
AGENT_ID = CANDIDATE_FIELDS.index("agent_id")
_MARKED = marks.as_row(CandidateRow)
_present = DecisionSerializer(many=True).to_representation

_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def settled(since: datetime | None) -> QuerySet:
    """Settled decisions created at or after `since` (every one when None)."""
    decisions = Decision.objects.filter(outcome_status__isnull=False)
    return decisions if since is None else decisions.filter(created_at__gte=since)


def _after(last: DatasetDecision, newest_first: bool) -> Q:
    """Decisions past this one in the reading order. The plain range on created_at comes
    first so the database walks the created_at index instead of sorting every match."""
    at, id_ = last.created_at, last.id
    if newest_first:
        return Q(created_at__lte=at) & (Q(created_at__lt=at) | Q(id__lt=id_))
    return Q(created_at__gte=at) & (Q(created_at__gt=at) | Q(id__gt=id_))


@cache
def _json_fields(model) -> frozenset[str]:
    return frozenset(f.name for f in model._meta.fields if isinstance(f, JSONField))


def _columns(model, fields: tuple[str, ...]) -> list:
    json_fields = _json_fields(model)
    return [Cast(f, TextField()) if f in json_fields else f for f in fields]


def _decoder() -> Callable[[str, str | None], Any]:
    """json.loads for one read, remembering the decoded texts of the fields that repeat."""
    memo: dict[str, Any] = {}
    loads = json.loads

    def decode(field: str, text: str | None) -> Any:
        if text is None:
            return None
        if field not in REPEATING:
            return loads(text)
        value = memo.get(text)
        if value is None:
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            value = memo[text] = loads(text)
        return value

    return decode


def _decoded(model, values: tuple, fields: tuple[str, ...], decode) -> list:
    json_fields = _json_fields(model)
    return [decode(f, v) if f in json_fields else v for f, v in zip(fields, values)]


# What training reads of a candidate that was neither held for nor claimed the card: its
# filters (the pool's counts), never its score, stage history or policy (it has no target).
DETAIL_FIELDS = frozenset({"score", "stage_history", "policy"})


def record_chunks(
    since: datetime | None, *, newest_first: bool = False, for_training: bool = False
) -> Iterator[list[dict[str, Any]]]:
    """Settled decision records (the operator API's shape), `CHUNK` at a time, at most
    `MAX_DECISIONS`. Oldest first, or newest first; ties on createdAt are broken by id.

    `for_training` leaves the score, stage history and policy of every candidate but the
    chosen one and the one that claimed as null, undecoded: nothing is trained on them, and
    decoding them is a third of a training read."""
    limit, chunk = MAX_DECISIONS, CHUNK  # read at call time, so a test can lower them
    order = ("-created_at", "-id") if newest_first else ("created_at", "id")
    decode = _decoder()
    read = 0
    last: DatasetDecision | None = None
    while read < limit:
        page = settled(since).order_by(*order)
        if last is not None:
            page = page.filter(_after(last, newest_first))
        size = min(chunk, limit - read)
        decisions = [
            DatasetDecision(*_decoded(Decision, values, DECISION_FIELDS + STORED_AS, decode))
            for values in page.values_list(*_columns(Decision, DECISION_FIELDS), *STORED_AS)[:size]
        ]
        if decisions:
            detailed = {d.id: (d.chosen, d.outcome_by) for d in decisions} if for_training else None
            candidates = _candidates([d.id for d in decisions], decode, detailed)
            yield _present(
                [
                    d._replace(
                        candidates=marks.merged(
                            d.id, candidates.get(d.id, ()), Roll.agents_of(d.roll_id), d.roll_marks, _MARKED
                        )
                    )
                    for d in decisions
                ]
            )
        if len(decisions) < size:
            return  # a short chunk was the last
        read += size
        last = decisions[-1]


def _candidates(
    decision_ids: list[str],
    decode,
    detailed: dict[str, tuple[str | None, str | None]] | None = None,
) -> dict[str, list[CandidateRow]]:
    """The candidates of these decisions, by decision, in record order; with `detailed`
    (decision id → agents), other agents' detail fields are left null."""
    found: dict[str, list[CandidateRow]] = {}
    rows_ = (
        Candidate.objects.filter(decision_id__in=decision_ids)
        .order_by("decision_id", "position")
        .values_list(*_columns(Candidate, CANDIDATE_FIELDS))
    )
    lean = _decoder_without(decode, DETAIL_FIELDS)
    for values in rows_:
        decision_id, agent_id = values[0], values[AGENT_ID]
        brief = detailed is not None and agent_id not in detailed[decision_id]
        c = CandidateRow._make(_decoded(Candidate, values, CANDIDATE_FIELDS, lean if brief else decode))
        found.setdefault(c.decision_id, []).append(c)
    return found


def _decoder_without(decode, fields: frozenset[str]) -> Callable[[str, str | None], Any]:
    """`decode`, reading these fields as null."""
    return lambda field, text: None if field in fields else decode(field, text)


def jsonl(since: datetime | None, goal: str = CLAIMED) -> Iterator[bytes]:
    """The dataset as JSON lines, one row a line, one bytes piece per chunk of decisions; each
    row's `target` under `goal`."""
    for records in record_chunks(since):
        yield "".join(_encode(row) + "\n" for record in records for row in rows(record, goal)).encode()


def json_document(since: datetime | None, goal: str = CLAIMED) -> Iterator[bytes]:
    """The dataset as one JSON document, streamed: `{schema, target, rows, decisions, truncated}`.

    `target` is what each row's `target` says (`claimed` or `succeeded`); `truncated` is true
    when settled decisions beyond the cap were left for a later read.
    """
    yield f'{{"schema":{SCHEMA},"target":{_encode(goal)},"rows":['.encode()
    first = True
    decisions = 0
    for records in record_chunks(since):
        decisions += len(records)
        encoded = [_encode(row) for record in records for row in rows(record, goal)]
        if encoded:
            yield (("" if first else ",") + ",".join(encoded)).encode()
            first = False
    truncated = (
        decisions == MAX_DECISIONS
        and settled(since).order_by("created_at", "id")[MAX_DECISIONS : MAX_DECISIONS + 1].exists()
    )
    yield f'],"decisions":{decisions},"truncated":{_encode(truncated)}}}'.encode()
