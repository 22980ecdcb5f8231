"""From the record back to the store's columns: the write plan of a decision and its candidates.

The record's shape is declared once, by its serializers (records.serializers), each field with
the model attribute it reads. A decision's write maps the placement record back to columns
through those same declarations (`decision_columns`, `candidate_row`), so a field added there
is written here with nothing else to change; a column neither read by a serializer nor worked
out by the write fails at start-up (`_candidate_plan`). The dataset reads the stored columns
through the same paths (`DECISION_READS`, `CANDIDATE_READS`).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping

import msgspec
from django.db import models
from rest_framework import serializers

from records.models import Candidate, Decision
from records.serializers import CandidateSerializer, DecisionSerializer
from records.store.reasons import reasons_of


def _reads(
    serializer: serializers.Serializer, path: tuple[str, ...] = ()
) -> list[tuple[str, tuple[str, ...]]]:
    """(model attribute, JSON path) of every column a serializer reads, through its groups;
    a nested list (a decision's candidates) is its own serializer's."""
    found = []
    for name, field in serializer.fields.items():
        if isinstance(field, serializers.ListSerializer):
            continue
        if isinstance(field, serializers.Serializer):
            found += _reads(field, path + (name,))
        else:
            found.append((field.source, path + (name,)))
    return found


DECISION_READS = _reads(DecisionSerializer())
CANDIDATE_READS = _reads(CandidateSerializer())
# What the write works out from the verdicts, and what places a candidate in its decision.
CANDIDATE_DERIVED = ("decision_id", "position", "in_set", "eligible", "reasons")
# A candidate's stored columns, the model's own, in the order `candidate_row` gives values.
CANDIDATE_STORED = tuple(f for f in Candidate._meta.concrete_fields if not f.primary_key)
DECISION_STORED = tuple(Decision._meta.concrete_fields)


def _at(record: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = record
    for key in path:
        if value is None:
            return None
        value = value.get(key)
    return value


def decision_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    """The Decision columns a decision record gives, by attribute (what it does not give,
    such as the outcome of a decision just made, is left out)."""
    return {attr: _at(record, path) for attr, path in DECISION_READS if path[0] in record}


def candidate_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    """The Candidate columns a candidate record gives, by attribute; the write works out the
    rest (`CANDIDATE_DERIVED`)."""
    return {attr: _at(record, path) for attr, path in CANDIDATE_READS}


_json_bytes = msgspec.json.Encoder().encode


def _json_text(value: Any) -> str:
    """A JSON column's text as a decision's write stores it. msgspec, not json: a decision
    writes a row for each of its candidates with three or four JSON columns each, and msgspec
    encodes a value several times faster than `json.dumps` (docs/performance.md)."""
    return _json_bytes(value).decode()


def encode_verdicts(filters: list[dict]) -> tuple[str, str]:
    """A candidate's filter verdicts as stored, and its rejections (`reasons_of`)."""
    return _json_text(filters), reasons_of(filters)


def stored_verdicts(value: str | list[dict]) -> list[dict]:
    """A `filters` column as raw SQL reads it (JSON text on SQLite, decoded on PostgreSQL):
    the candidate's verdicts, `[{filter, passed, reason?, missing?}]`."""
    return json.loads(value) if isinstance(value, str) else value


def _stored(field: models.Field, value: Any) -> Any:
    # A JSON column's value as the store keeps it (None is SQL NULL, as Django writes it).
    return _stored_json(value) if isinstance(field, models.JSONField) else value


# What the writer gives each candidate row, by name; `filters` too, encoded once for the
# candidates that share one verdicts tuple.
_GIVEN = ("decision_id", "position", "in_set", "eligible", "reasons", "filters")


def _getter(path: tuple[str, ...], as_json: bool) -> Callable[[Mapping[str, Any]], Any]:
    """Reads one column's value from a candidate record (None when absent), as stored."""
    if len(path) == 1:
        key = path[0]
        if as_json:
            return lambda record: None if (v := record.get(key)) is None else _json_text(v)
        return lambda record: record.get(key)
    if len(path) == 2:  # `_at` unrolled: a decision writes thousands of candidate rows
        outer, inner = path
        if as_json:
            return lambda record: None if (v := record.get(outer)) is None else _stored_json(v.get(inner))
        return lambda record: None if (v := record.get(outer)) is None else v.get(inner)
    return lambda record: _stored_json(_at(record, path)) if as_json else _at(record, path)


def _stored_json(value: Any) -> str | None:
    return None if value is None else _json_text(value)


def _candidate_plan() -> list[tuple[int, Callable | None]]:
    """Per stored column: the index of the value the writer gives, or how to read it from
    the record. A column neither read by `CandidateSerializer` nor given by the write has no
    place in the record: it fails here, at start-up."""
    paths = dict(CANDIDATE_READS)
    plan: list[tuple[int, Callable | None]] = []
    for field in CANDIDATE_STORED:
        if field.attname in _GIVEN:
            plan.append((_GIVEN.index(field.attname), None))
        elif field.attname in paths:
            plan.append((-1, _getter(paths[field.attname], isinstance(field, models.JSONField))))
        else:
            raise LookupError(
                f"Candidate.{field.attname} is neither in CandidateSerializer nor worked out by the write"
            )
    return plan


_CANDIDATE_PLAN = _candidate_plan()


def candidate_row(
    decision_id: str,
    position: int,
    record: Mapping[str, Any],
    *,
    in_set: bool,
    eligible: bool,
    verdicts: tuple[str, str] | None = None,
) -> tuple:
    """One candidate record's column values, in `CANDIDATE_STORED` order, JSON encoded as
    stored. `verdicts` is `encode_verdicts(record["filters"])` when the caller has it already
    (candidates that passed every filter share one)."""
    filters, reasons = verdicts or encode_verdicts(record["filters"])
    given = (decision_id, position, in_set, eligible, reasons, filters)
    return tuple([given[i] if get is None else get(record) for i, get in _CANDIDATE_PLAN])


def stored_row(model: type[models.Model], values: Mapping[str, Any]) -> tuple:
    """A row of a model's concrete columns from values by attribute, JSON encoded as stored;
    a column not among them takes its field's default, as the ORM would write it."""
    return tuple(
        _stored(f, values[f.attname] if f.attname in values else f.get_default())
        for f in model._meta.concrete_fields
    )
