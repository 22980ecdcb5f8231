"""The record's shape, in one place: how a stored board, decision, candidate and suggestion maps
to the JSON the operator API answers (camelCase, exactly as the docs name each field).

The serializers below declare every field once, with the model attribute it reads. The API and
its schema, the admin, the dataset and the suggestions read records through them, and the
write of a decision maps the placement record back to columns through the same declarations
(records/store/columns.py), so a field is added here and nowhere else.
"""
from __future__ import annotations

from datetime import datetime
from functools import cached_property
from operator import attrgetter
from typing import Any, Callable

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from common.times import iso, parse_time

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
    formula = serializers.CharField(
        required=False, allow_null=True,
        help_text="the board's own formula (a declared formula's recorded name, or pull), over "
                  "SUPERDISPATCH_FORMULA; left out where the board has none")

    omit_when_null = ("formula",)


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


class ExperimentBlockSerializer(Columns):
    id = serializers.CharField(source="experiment_id")
    block = serializers.IntegerField(source="experiment_block")
    arm = serializers.CharField(source="experiment_arm", help_text="a formula's recorded name, or pull")

    present = "experiment_id"


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
                  "of the board says whether it was held, or, where the card was claimed or "
                  "had left its ladder first, it stays: nobody can say")
    outcome = OutcomeSerializer(source="*", allow_null=True)
    createdAt = Time(source="created_at")
    learned = serializers.JSONField(required=False, allow_null=True)
    waiting = serializers.JSONField(required=False, allow_null=True,
                                    help_text="the waiting formula's hold for a busy agent")
    outlook = serializers.JSONField(required=False, allow_null=True,
                                    help_text="pull's expected time to a success against the best hold's")
    run = RunSerializer(source="*", required=False, allow_null=True,
                        help_text="the claim's run, once SuperWitness has it")
    experiment = ExperimentBlockSerializer(
        source="*", required=False, allow_null=True,
        help_text="the experiment whose block was in force when the card was decided")

    omit_when_null = ("reservationUnknown", "learned", "waiting", "outlook", "run", "experiment")


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


# --- Experiments --------------------------------------------------------------------------

class BlockSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    arm = serializers.CharField(help_text="a formula's recorded name, or pull")
    starts = serializers.CharField(help_text="a time (RFC 3339)")
    ends = serializers.CharField(help_text="a time (RFC 3339)")


class DroppedArmSerializer(serializers.Serializer):
    arm = serializers.CharField()
    at = serializers.CharField(help_text="when the guardrail dropped it (RFC 3339)")
    why = serializers.CharField()


class GuardrailSerializer(serializers.Serializer):
    successDrop = serializers.FloatField(help_text="drop an arm whose success is below pull's by more than this")
    leadRatio = serializers.FloatField(help_text="or whose mean lead exceeds pull's by this ratio")


@extend_schema_field(BlockSerializer(many=True))
class ScheduleJson(serializers.JSONField):
    """The schedule drawn at the start, as stored."""


@extend_schema_field(DroppedArmSerializer(many=True))
class DroppedJson(serializers.JSONField):
    """The arms the guardrail dropped, when and why."""


@extend_schema_field(GuardrailSerializer())
class GuardrailJson(serializers.JSONField):
    """The guardrail's bounds, as given at the start."""


class ExperimentSerializer(Row):
    """One switchback experiment: its plan, the schedule drawn at its start, what the guardrail
    dropped, the newest analysis, and the winner once decided."""

    id = serializers.CharField()
    state = serializers.CharField(help_text="running, holdback, done or stopped")
    boards = serializers.JSONField(help_text="[boardId, ...]: whole clusters of boards that share agents")
    arms = serializers.JSONField(help_text="[a formula's recorded name, or pull, ...]")
    objective = serializers.CharField(help_text="success or lead")
    blockSeconds = serializers.IntegerField(source="block_seconds")
    seed = serializers.IntegerField()
    burnInSeconds = serializers.IntegerField(source="burn_in_seconds")
    guardrail = GuardrailJson()
    holdbackEvery = serializers.IntegerField(
        source="holdback_every", required=False, allow_null=True,
        help_text="after the decision, one block in this many keeps running pull; left out without a holdback")
    schedule = ScheduleJson()
    dropped = DroppedJson()
    winner = serializers.CharField(allow_null=True, help_text="the winning arm for the objective, once decided")
    decidedAt = Time(source="decided_at", allow_null=True)
    analysis = serializers.JSONField(
        allow_null=True, help_text="the newest analysis after a block: per arm, each against pull "
        "with a 95% interval, blocks still needed, the guardrail's drops (placement/switchback.py)")
    holdback = serializers.JSONField(
        required=False, allow_null=True,
        help_text="the holdback's newest figure: the board's formula against pull over its blocks")
    startsAt = Time(source="starts_at")
    endsAt = Time(source="ends_at")
    stoppedAt = Time(source="stopped_at", allow_null=True)
    createdBy = serializers.CharField(source="created_by")
    createdAt = Time(source="created_at")

    omit_when_null = ("holdbackEvery", "holdback")
