"""The record's shape, in one place: how a stored board, decision and candidate maps to the JSON
the operator API answers (camelCase, exactly as the docs name each field). A suggestion's and an
experiment's are `suggestion_serializers.py`'s and `experiment_serializers.py`'s, on the same
building blocks (`Time`, `Row`, `Columns`).

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
from records.models.decisions import OUTCOMES, REASONS, TIERS

RUN_STATUSES = ("succeeded", "failed")

# --- Times: answered and read as common.times writes and reads them ---------------------


class Time(serializers.DateTimeField):
    """A time: answered as `iso` writes it, read as `parse_time` reads it. The schema's words
    are an answer's; a parameter or body field is a `TimeInput`."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", ANSWERED_TIME)
        super().__init__(**kwargs)

    def to_representation(self, value: datetime) -> str | None:
        return iso(value)

    def to_internal_value(self, value) -> datetime:
        try:
            return parse_time(value)
        except (ValueError, TypeError, AttributeError):
            self.fail("invalid", format=parse_time.rule)


ANSWERED_TIME = "RFC 3339 in UTC, to the millisecond (2026-11-13T10:03:12.000Z)"


class TimeInput(Time):
    """A time a caller sends: RFC 3339, or a plain date."""

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", parse_time.rule)
        super().__init__(**kwargs)


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
            as_is = (
                isinstance(field, serializers.JSONField)
                and not field.binary
                or type(field) in (serializers.CharField, serializers.ChoiceField)
            )
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


# --- The JSON a record keeps, as the schema declares it ---------------------------------
# These values are answered as they were kept (JSONField); the serializers below only state
# their shape, so a generated client reads each key as a typed field.


def word_list(**kwargs) -> serializers.ListField:
    return serializers.ListField(child=serializers.CharField(), **kwargs)


@extend_schema_field({"type": "array", "items": {"type": "string"}})
class StringsJson(serializers.JSONField):
    """A list of words or ids, kept as found."""


class CapabilitySerializer(serializers.Serializer):
    all = word_list(help_text="capabilities an agent must have, every one")
    any = word_list(help_text="capabilities of which an agent must have at least one (none: no such need)")


@extend_schema_field(CapabilitySerializer(allow_null=True))
class CapabilityJson(serializers.JSONField):
    """`{all, any}`: what the card's stage asks of an agent."""


class StageHistorySerializer(serializers.Serializer):
    """The runs read and the record they give; the counts behind it where the record kept them."""

    runs = serializers.IntegerField(help_text="SuperWitness runs read at this stage")
    succeeded = serializers.IntegerField(required=False, help_text="of those, the runs that succeeded")
    verdicts = serializers.IntegerField(required=False, help_text="runs whose newest verdict gave a mark")
    passes = serializers.IntegerField(required=False, help_text="of those, marks of one half or more")
    weight = serializers.FloatField(
        required=False, help_text="the runs' total weight, newer runs weighing more"
    )
    outcomeRate = serializers.FloatField(required=False, help_text="the weighed share of runs that succeeded")
    verdictRate = serializers.FloatField(required=False, help_text="the weighed share of passing marks")
    stageRecord = serializers.FloatField(help_text="the record the score ranks by, 0 to 1")


@extend_schema_field(StageHistorySerializer(allow_null=True))
class StageHistoryJson(serializers.JSONField):
    """The agent's runs at the card's stage, as the score read them."""


class PolicyVerdictSerializer(serializers.Serializer):
    allow = serializers.BooleanField(help_text="whether the dispatch policy allows the agent")
    reasons = word_list(help_text="the policy's reason codes")
    policyVersion = serializers.CharField(allow_null=True, help_text="the policy version that answered")


@extend_schema_field(PolicyVerdictSerializer(allow_null=True))
class PolicyVerdictJson(serializers.JSONField):
    """The dispatch policy's verdict on the agent, when it was asked."""


class LearnedViewSerializer(serializers.Serializer):
    model = serializers.CharField(help_text="the model's id, mdl_…")
    version = serializers.IntegerField()
    mode = serializers.ChoiceField(["shadow", "on"], help_text="shadow: it only watched")
    choice = serializers.CharField(allow_null=True, help_text="the agent the model ranks first")
    formulaChoice = serializers.CharField(allow_null=True, help_text="the agent the formula chose")
    placed = serializers.BooleanField(help_text="whether the model's choice was held")
    probabilities = serializers.DictField(
        child=serializers.FloatField(), help_text="each eligible agent's chance, by agent id"
    )


@extend_schema_field(LearnedViewSerializer())
class LearnedJson(serializers.JSONField):
    """Learned routing's view of the decision, in shadow or on."""


class PassedOverSerializer(serializers.Serializer):
    agentId = serializers.CharField()
    outcomeRate = serializers.FloatField()
    expectedLeadS = serializers.FloatField(help_text="its expected seconds to a finished run")
    why = serializers.CharField(help_text="success-below-margin")
    detail = serializers.CharField(help_text="the same, in words")


class WaitingSerializer(serializers.Serializer):
    agentId = serializers.CharField(help_text="the busy agent held")
    idle = serializers.BooleanField(help_text="false: it was busy when held")
    expectedWaitS = serializers.FloatField(help_text="its expected seconds until it is free")
    outcomeRate = serializers.FloatField()
    expectedLeadS = serializers.FloatField(help_text="its expected seconds to a finished run")
    passedOver = PassedOverSerializer(help_text="the idle agent it was preferred to, and why")


@extend_schema_field(WaitingSerializer())
class WaitingJson(serializers.JSONField):
    """The hold made for a busy agent, by a formula that may hold one."""


class OutlookSerializer(serializers.Serializer):
    agentId = serializers.CharField(allow_null=True, help_text="the best hold's agent")
    holdS = serializers.FloatField(help_text="its expected seconds to a success")
    pullS = serializers.FloatField(help_text="pull's expected seconds to a success")
    windowS = serializers.FloatField(help_text="what was left of the placement window")
    steppedAside = serializers.BooleanField(help_text="whether the card was left to pull")
    shareNeeded = serializers.FloatField(
        help_text="how much sooner than pull a hold must be expected to succeed"
    )
    holdSuccess = serializers.FloatField(help_text="the best hold's chance of success")
    pullSuccess = serializers.FloatField(help_text="pull's winner's chance of success")
    fleetDiffers = serializers.BooleanField(
        allow_null=True, help_text="whether a hold would beat pull were every busy agent idle"
    )


@extend_schema_field(OutlookSerializer())
class OutlookJson(serializers.JSONField):
    """What a formula that may step aside weighed: pull's expected time to a success against the best
    hold's."""


class FilterVerdictSerializer(serializers.Serializer):
    filter = serializers.CharField()
    passed = serializers.BooleanField()
    reason = serializers.CharField(required=False, help_text="the reason code of a rejection")
    missing = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="what a station filter found its station lacked",
    )
    unchecked = serializers.BooleanField(
        required=False,
        help_text="passed without being judged: the station registry could not "
        "be read, or (policy) an agent refused on the grant was never asked about",
    )


@extend_schema_field(FilterVerdictSerializer(many=True))
class Verdicts(serializers.JSONField):
    """Every filter's verdict on a candidate, kept as placement recorded them."""


class ScoreTermsSerializer(serializers.Serializer):
    """The numbers a formula ranked by, in its order; a term that did not weigh is absent."""

    stageRecord = serializers.FloatField(required=False, help_text="the agent's record at this stage, 0 to 1")
    successRate = serializers.FloatField(required=False, help_text="its holds on this board that it claimed")
    sinceLastDispatchS = serializers.FloatField(
        required=False, allow_null=True, help_text="seconds since it last took work; null: never"
    )
    claimS = serializers.FloatField(required=False, help_text="ranked by lead: seconds to a claim")
    runS = serializers.FloatField(required=False, help_text="ranked by lead: seconds a run takes")
    success = serializers.FloatField(required=False, help_text="ranked by lead: chance of success")
    retryS = serializers.FloatField(required=False, help_text="ranked by lead: seconds to retry")
    show = serializers.FloatField(required=False, help_text="ranked by lead: chance it claims")
    holdS = serializers.FloatField(required=False, help_text="ranked by lead: the hold's length")
    queueS = serializers.FloatField(required=False, help_text="ranked by lead: seconds queued")
    expectedS = serializers.FloatField(
        required=False, help_text="ranked by lead: expected seconds to a success"
    )


class ScoreSerializer(serializers.Serializer):
    total = serializers.FloatField()
    terms = ScoreTermsSerializer()


@extend_schema_field(ScoreSerializer(allow_null=True))
class ScoreJson(serializers.JSONField):
    """`{total, terms}`, kept as placement recorded it."""


# --- Boards -----------------------------------------------------------------------------


class BoardSerializer(Row):
    """A board SuperDispatch places cards on."""

    boardId = serializers.CharField(source="board_id", help_text="SuperPipeline's board id (brd_…)")
    enabled = serializers.BooleanField(help_text="whether SuperDispatch places its cards (false: opted out)")
    createdAt = Time(source="created_at", help_text="when it was first opted in")
    updatedAt = Time(source="updated_at", help_text="when it was last opted in or out")
    formula = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="the board's own formula (a declared formula's recorded name, or pull), over "
        "SUPERDISPATCH_FORMULA; left out where the board has none",
    )

    omit_when_null = ("formula",)


# --- Decisions and their candidates -----------------------------------------------------


class CandidateIdentitySerializer(Row):
    """Who the candidate is, and how it came to be considered."""

    agentId = serializers.CharField(source="agent_id", help_text="AgentPod's agent id (agt_…)")
    principalId = serializers.CharField(
        source="principal_id", allow_null=True, help_text="the agent's principal, as SuperWitness knows it"
    )
    stationId = serializers.CharField(
        source="station_id", allow_null=True, help_text="the station the agent runs in, when it has one"
    )
    source = serializers.ChoiceField(
        ["roster", "direct"], help_text="roster: on the board's roster; direct: asked for by name"
    )


class CandidateSerializer(Row):
    """One agent considered for a decision."""

    candidate = CandidateIdentitySerializer(source="*")
    filters = Verdicts(help_text="each filter's verdict on the agent, in the filters' order")
    score = ScoreJson(allow_null=True, help_text="its score among the eligible; null: not eligible")
    capable = serializers.BooleanField(
        allow_null=True,
        required=False,
        help_text="only for an agent off the roster: whether it has the stage's capability",
    )
    stageHistory = StageHistoryJson(source="stage_history", allow_null=True)
    policy = PolicyVerdictJson(required=False, allow_null=True)

    omit_when_null = ("capable", "policy")


class TierSerializer(Columns):
    """The step of the card's ladder this decision was made at."""

    name = serializers.ChoiceField(TIERS, source="tier_name", help_text="the ladder's tier")
    step = serializers.IntegerField(source="tier_step")

    present = "tier_name"


class ReservationSerializer(Columns):
    """The hold on the card; null when nobody was held, or while its answer is unknown."""

    reservedUntil = Time(source="reserved_until", help_text="when the hold lapses")

    present = "reserved_until"

    def get_attribute(self, instance):
        # An unknown hold's `reserved_until` is only the latest it could end: no hold yet.
        if getattr(instance, "reservation_unknown", None) is not None:
            return None
        return super().get_attribute(instance)


class OutcomeSerializer(Columns):
    """What became of the decision's card; null until it is settled."""

    status = serializers.ChoiceField(OUTCOMES, source="outcome_status", help_text="what became of the card")
    by = serializers.CharField(
        source="outcome_by", allow_null=True, help_text="the agent that claimed it, when one did"
    )
    at = Time(source="outcome_at", help_text="when it was settled")

    present = "outcome_status"


class RunSerializer(Columns):
    """The claim's run, as SuperWitness recorded it."""

    status = serializers.ChoiceField(RUN_STATUSES, source="run_status", help_text="how the claim's run ended")
    verdictMark = serializers.FloatField(source="run_mark", allow_null=True)
    endedAt = Time(source="run_ended_at", allow_null=True, help_text="when the run ended")

    present = "run_status"


class ExperimentBlockSerializer(Columns):
    id = serializers.CharField(source="experiment_id")
    block = serializers.IntegerField(source="experiment_block")
    arm = serializers.CharField(source="experiment_arm", help_text="a formula's recorded name, or pull")

    present = "experiment_id"


class DecisionSerializer(Row):
    """One placement decision: a step of a card's ladder, with its hold and outcome."""

    id = serializers.CharField(help_text="the decision's id (pld_…)")
    boardId = serializers.CharField(source="board_id", help_text="the card's board (brd_…)")
    cardId = serializers.CharField(source="card_id", help_text="the card decided (card_…)")
    stageKey = serializers.CharField(source="stage_key", help_text="the stage the card waits in")
    policy = serializers.CharField(help_text="the formula that decided, name@version")
    chosen = serializers.CharField(allow_null=True, help_text="the agent held for; null: nobody")
    reason = serializers.ChoiceField(
        REASONS, allow_null=True, help_text="why it chose as it did, when the score alone does not say"
    )
    tier = TierSerializer(source="*", allow_null=True)
    requires = CapabilityJson(allow_null=True)
    candidates = CandidateSerializer(many=True, help_text="every agent considered")
    reservation = ReservationSerializer(source="*", allow_null=True)
    reservationRefused = serializers.CharField(
        source="reservation_refused",
        allow_null=True,
        help_text="why SuperPipeline refused the hold, when it did (its answer's code)",
    )
    reservationUnknown = serializers.CharField(
        source="reservation_unknown",
        required=False,
        allow_null=True,
        help_text="the hold was asked for and no answer came (why: `timeout`); the next read "
        "of the board says whether it was held, or, where the card was claimed or "
        "had left its ladder first, it stays: nobody can say",
    )
    outcome = OutcomeSerializer(source="*", allow_null=True)
    createdAt = Time(source="created_at", help_text="when it was decided")
    learned = LearnedJson(required=False, allow_null=True)
    waiting = WaitingJson(required=False, allow_null=True)
    outlook = OutlookJson(required=False, allow_null=True)
    run = RunSerializer(
        source="*", required=False, allow_null=True, help_text="the claim's run, once SuperWitness has it"
    )
    experiment = ExperimentBlockSerializer(
        source="*",
        required=False,
        allow_null=True,
        help_text="the experiment whose block was in force when the card was decided",
    )

    omit_when_null = ("reservationUnknown", "learned", "waiting", "outlook", "run", "experiment")
