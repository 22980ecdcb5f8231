"""The record's shape, in one place: how a stored board, decision, candidate and suggestion maps
to and from the JSON the operator API answers (camelCase, exactly as the docs name each field).

The serializers below declare every field once, with the model attribute it reads. The API and
its schema, the admin, the dataset and the suggestions read records through them, and the
write of a decision maps the placement record back to columns through the same declarations
(`decision_columns`, `candidate_row`), so a field is added here and nowhere else.
"""
from __future__ import annotations

import json
from datetime import datetime
from functools import cached_property
from operator import attrgetter
from typing import Any, Callable, Mapping

import msgspec
from django.db import models
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from common.times import iso, parse_time
from records.api.explain import explain
from records.models import Candidate, Decision
from records.store.columns import (  # noqa: F401  (the record's readers find them here too)
    has_reason, has_reason_sql, only_reasons_sql, reasons_column, reasons_of,
)

# --- Times: answered and read as common.times writes and reads them ---------------------


class Time(serializers.DateTimeField):
    """A time: answered as `iso` writes it, read as `parse_time` reads it."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", parse_time.rule)
        super().__init__(**kwargs)

    def to_representation(self, value: datetime) -> str | None:
        return iso(value)

    def to_internal_value(self, value) -> datetime:
        try:
            return parse_time(value)
        except (ValueError, TypeError, AttributeError):
            self.fail("invalid", format=parse_time.rule)


# --- Building blocks --------------------------------------------------------------------

class Row(serializers.Serializer):
    """One stored row as JSON. The fields named in `omit_when_null` are left out when null:
    the docs' optional fields (a candidate's `capable` and `policy`, a decision's `learned`).

    The dataset presents up to 100,000 decisions in one read, so each field's getter and
    converter are worked out once per serializer rather than once per value, as DRF's own
    loop does; the answer is the same (a null stays null, unconverted)."""

    omit_when_null: tuple[str, ...] = ()

    @cached_property
    def _plan(self) -> list[tuple[str, Callable, Callable | None]]:
        plan = []
        for field in self._readable_fields:
            if isinstance(field, serializers.BaseSerializer) or field.source == "*":
                get = field.get_attribute
            else:
                get = attrgetter(field.source)
            # A JSON field answers its value as it is, and a CharField str(value), which a
            # string column's value already is.
            as_is = (isinstance(field, serializers.JSONField) and not field.binary
                     or type(field) is serializers.CharField)
            plan.append((field.field_name, get, None if as_is else field.to_representation))
        return plan

    def to_representation(self, instance) -> dict[str, Any]:
        out = {}
        for name, get, convert in self._plan:
            value = get(instance)
            out[name] = value if value is None or convert is None else convert(value)
        for name in self.omit_when_null:
            if out[name] is None:
                del out[name]
        return out


class Columns(Row):
    """A JSON object made of some of its parent row's columns (declared with `source="*"`);
    null when the `present` column is."""

    present: str

    def get_attribute(self, instance):
        return None if getattr(instance, self.present) is None else instance


class FilterVerdictSerializer(serializers.Serializer):
    filter = serializers.CharField()
    passed = serializers.BooleanField()
    reason = serializers.CharField(required=False, help_text="the reason code of a rejection")
    missing = serializers.ListField(child=serializers.CharField(), required=False,
                                    help_text="what a station filter found its station lacked")
    unchecked = serializers.BooleanField(
        required=False, help_text="passed without being judged: the station registry could not "
        "be read, or (policy) an agent refused on the grant was never asked about")


@extend_schema_field(FilterVerdictSerializer(many=True))
class Verdicts(serializers.JSONField):
    """Every filter's verdict on a candidate, kept as placement recorded them."""


class ScoreSerializer(serializers.Serializer):
    total = serializers.FloatField()
    terms = serializers.DictField(help_text="stageRecord, successRate, sinceLastDispatchS")


@extend_schema_field(ScoreSerializer(allow_null=True))
class ScoreJson(serializers.JSONField):
    """`{total, terms}`, kept as placement recorded it."""


# --- Boards -----------------------------------------------------------------------------

class BoardSerializer(Row):
    boardId = serializers.CharField(source="board_id")
    enabled = serializers.BooleanField()
    createdAt = Time(source="created_at")
    updatedAt = Time(source="updated_at")


# --- Decisions and their candidates -----------------------------------------------------

class CandidateIdentitySerializer(Row):
    agentId = serializers.CharField(source="agent_id")
    principalId = serializers.CharField(source="principal_id", allow_null=True)
    stationId = serializers.CharField(source="station_id", allow_null=True)
    source = serializers.CharField(help_text="roster or direct")


class CandidateSerializer(Row):
    """One agent considered for a decision."""

    candidate = CandidateIdentitySerializer(source="*")
    filters = Verdicts()
    score = ScoreJson(allow_null=True)
    capable = serializers.BooleanField(
        allow_null=True, required=False,
        help_text="only for an agent off the roster: whether it has the stage's capability")
    stageHistory = serializers.JSONField(source="stage_history", allow_null=True)
    policy = serializers.JSONField(required=False, allow_null=True,
                                   help_text="{allow, reasons, policyVersion}, when asked")

    omit_when_null = ("capable", "policy")


class TierSerializer(Columns):
    name = serializers.CharField(source="tier_name", help_text="winner, runner-up or any-match")
    step = serializers.IntegerField(source="tier_step")

    present = "tier_name"


class ReservationSerializer(Columns):
    reservedUntil = Time(source="reserved_until")

    present = "reserved_until"

    def get_attribute(self, instance):
        # An unknown hold's `reserved_until` is only the latest it could end: no hold yet.
        if getattr(instance, "reservation_unknown", None) is not None:
            return None
        return super().get_attribute(instance)


class OutcomeSerializer(Columns):
    status = serializers.CharField(source="outcome_status")
    by = serializers.CharField(source="outcome_by", allow_null=True)
    at = Time(source="outcome_at")

    present = "outcome_status"


class RunSerializer(Columns):
    status = serializers.CharField(source="run_status", help_text="succeeded or failed")
    verdictMark = serializers.FloatField(source="run_mark", allow_null=True)
    endedAt = Time(source="run_ended_at", allow_null=True)

    present = "run_status"


class DecisionSerializer(Row):
    """One placement decision: a step of a card's ladder, with its hold and outcome."""

    id = serializers.CharField()
    boardId = serializers.CharField(source="board_id")
    cardId = serializers.CharField(source="card_id")
    stageKey = serializers.CharField(source="stage_key")
    policy = serializers.CharField()
    chosen = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    tier = TierSerializer(source="*", allow_null=True)
    requires = serializers.JSONField(allow_null=True, help_text="{all, any}")
    candidates = CandidateSerializer(many=True)
    reservation = ReservationSerializer(source="*", allow_null=True)
    reservationRefused = serializers.CharField(source="reservation_refused", allow_null=True)
    reservationUnknown = serializers.CharField(
        source="reservation_unknown", required=False, allow_null=True,
        help_text="the hold was asked for and no answer came (why: `timeout`); the next read "
                  "of the board says whether it was held")
    outcome = OutcomeSerializer(source="*", allow_null=True)
    createdAt = Time(source="created_at")
    learned = serializers.JSONField(required=False, allow_null=True)
    waiting = serializers.JSONField(required=False, allow_null=True,
                                    help_text="the waiting formula's hold for a busy agent")
    run = RunSerializer(source="*", required=False, allow_null=True,
                        help_text="the claim's run, once SuperWitness has it")

    omit_when_null = ("reservationUnknown", "learned", "waiting", "run")


class ExplainedDecisionSerializer(DecisionSerializer):
    """A decision as the operator API answers it: the record, then `explanation`, the same
    words as its admin page. The dataset reads the record alone (`DecisionSerializer`)."""

    explanation = serializers.CharField(read_only=True, help_text="the decision in words")

    @cached_property
    def _plan(self) -> list[tuple[str, Callable, Callable | None]]:
        return [step for step in super()._plan if step[0] != "explanation"]

    def to_representation(self, instance) -> dict[str, Any]:
        record = super().to_representation(instance)
        record["explanation"] = explain(record)
        return record


# --- Suggestions ------------------------------------------------------------------------

ROSTER_FIELDS = ("capability", "rostered", "candidates", "reasons", "reason")
SUPPLY_FIELDS = ("rationale", "target", "estimatedEffect", "howToApply", "registry")


class SuggestionSerializer(serializers.Serializer):
    """A roster suggestion or a supply proposal; each answers its own kind's fields."""

    id = serializers.CharField()
    kind = serializers.CharField()
    boardId = serializers.CharField(source="board_id")
    stageKey = serializers.CharField(source="stage_key")
    # Roster suggestions
    capability = serializers.JSONField(required=False, allow_null=True)
    rostered = serializers.JSONField(required=False)
    candidates = serializers.JSONField(required=False)
    reasons = serializers.JSONField(required=False)
    reason = serializers.CharField(required=False)
    # Supply proposals
    rationale = serializers.CharField(required=False)
    target = serializers.JSONField(required=False, allow_null=True)
    estimatedEffect = serializers.JSONField(source="estimated_effect", required=False,
                                            allow_null=True)
    howToApply = serializers.CharField(source="how_to_apply", required=False)
    registry = serializers.CharField(required=False, help_text="read or unread")
    # Both
    evidence = serializers.JSONField(help_text="the newest decisions that bear it out")
    evidenceCount = serializers.IntegerField(source="evidence_count")
    firstSeenAt = Time(source="first_seen_at")
    lastSeenAt = Time(source="last_seen_at")
    resolvedAt = Time(source="resolved_at", allow_null=True)
    dismissedAt = Time(source="dismissed_at", allow_null=True)

    def to_representation(self, instance) -> dict[str, Any]:
        out = super().to_representation(instance)
        for name in ROSTER_FIELDS if instance.is_supply else SUPPLY_FIELDS:
            del out[name]
        return out


# --- From the record back to columns ----------------------------------------------------

def _reads(serializer: serializers.Serializer, path: tuple[str, ...] = ()
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
            raise LookupError(f"Candidate.{field.attname} is neither in CandidateSerializer "
                              "nor worked out by the write")
    return plan


_CANDIDATE_PLAN = _candidate_plan()


def candidate_row(decision_id: str, position: int, record: Mapping[str, Any], *, in_set: bool,
                  eligible: bool, verdicts: tuple[str, str] | None = None) -> tuple:
    """One candidate record's column values, in `CANDIDATE_STORED` order, JSON encoded as
    stored. `verdicts` is `encode_verdicts(record["filters"])` when the caller has it already
    (candidates that passed every filter share one)."""
    filters, reasons = verdicts or encode_verdicts(record["filters"])
    given = (decision_id, position, in_set, eligible, reasons, filters)
    return tuple([given[i] if get is None else get(record) for i, get in _CANDIDATE_PLAN])


def stored_row(model: type[models.Model], values: Mapping[str, Any]) -> tuple:
    """A row of a model's concrete columns from values by attribute, JSON encoded as stored;
    a column not among them takes its field's default, as the ORM would write it."""
    return tuple(_stored(f, values[f.attname] if f.attname in values else f.get_default())
                 for f in model._meta.concrete_fields)
