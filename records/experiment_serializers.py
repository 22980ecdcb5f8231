"""Switchback experiments as the operator API answers them: the plan, the schedule drawn at the
start, the guardrail's drops and the newest analysis, over the record's building blocks
(`records/serializers.py`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from placement.switchback_analysis import OBJECTIVES
from records.models.experiments import ExperimentState
from records.serializers import Row, StringsJson, Time, word_list

EXPERIMENT_STATES = tuple(ExperimentState.values)


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
    successDrop = serializers.FloatField(
        help_text="drop an arm whose success is below pull's by more than this"
    )
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


class FigureSerializer(serializers.Serializer):
    estimate = serializers.FloatField()
    low = serializers.FloatField(help_text="the 95% interval's low end")
    high = serializers.FloatField(help_text="its high end")


class BlockFiguresSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    arm = serializers.CharField()
    cards = serializers.IntegerField(help_text="cards that count for the block")
    success = serializers.FloatField(allow_null=True, help_text="the share of runs that succeeded")
    leadMeanS = serializers.FloatField(allow_null=True, help_text="mean seconds to a success")
    waitP95S = serializers.FloatField(allow_null=True, help_text="p95 seconds to a claim")


class ArmFiguresSerializer(serializers.Serializer):
    arm = serializers.CharField()
    blocks = serializers.IntegerField()
    cards = serializers.IntegerField()
    success = serializers.FloatField(allow_null=True)
    lead_mean_s = serializers.FloatField(allow_null=True, help_text="mean seconds to a success")
    wait_p95_s = serializers.FloatField(allow_null=True, help_text="p95 seconds to a claim")


class ComparisonSerializer(serializers.Serializer):
    arm = serializers.CharField()
    against = serializers.CharField()
    success = FigureSerializer(allow_null=True, help_text="the difference in success")
    lead_ratio = FigureSerializer(allow_null=True, help_text="the ratio of mean leads")
    wait_p95_s = FigureSerializer(allow_null=True, help_text="the difference in p95 wait, s")


class GuardrailDropSerializer(serializers.Serializer):
    arm = serializers.CharField()
    metric = serializers.CharField()
    estimate = serializers.FloatField()
    bound = serializers.FloatField()
    why = serializers.CharField()


class GuardrailReadSerializer(serializers.Serializer):
    success_drop = serializers.FloatField()
    lead_ratio = serializers.FloatField()
    alpha = serializers.FloatField()
    design_effect = serializers.FloatField()
    min_blocks = serializers.IntegerField()


class AnalysisSerializer(serializers.Serializer):
    """What the ended blocks say, as the newest review read them."""

    objective = serializers.ChoiceField(OBJECTIVES)
    burnInS = serializers.IntegerField()
    blocksEnded = serializers.IntegerField()
    blocksTotal = serializers.IntegerField()
    blocks = BlockFiguresSerializer(many=True)
    arms = ArmFiguresSerializer(many=True)
    againstPull = ComparisonSerializer(many=True)
    between = ComparisonSerializer(many=True)
    winner = serializers.CharField(allow_null=True)
    why = serializers.CharField()
    blocksToDecision = serializers.IntegerField(
        allow_null=True, help_text="null: the spread seen never decides"
    )
    drops = GuardrailDropSerializer(many=True)
    dropped = word_list()
    guardrail = GuardrailReadSerializer()


@extend_schema_field(AnalysisSerializer(allow_null=True))
class AnalysisJson(serializers.JSONField):
    """The newest analysis, as stored."""


class ExperimentSerializer(Row):
    """One switchback experiment: its plan, the schedule drawn at its start, what the guardrail
    dropped, the newest analysis, and the winner once decided."""

    id = serializers.CharField()
    state = serializers.ChoiceField(EXPERIMENT_STATES, help_text="where the experiment is")
    boards = StringsJson(help_text="board ids: whole clusters of boards that share agents")
    arms = StringsJson(help_text="each a formula's recorded name, or pull")
    objective = serializers.ChoiceField(OBJECTIVES, help_text="what the winner is chosen for")
    blockSeconds = serializers.IntegerField(source="block_seconds")
    seed = serializers.IntegerField()
    burnInSeconds = serializers.IntegerField(source="burn_in_seconds")
    guardrail = GuardrailJson()
    holdbackEvery = serializers.IntegerField(
        source="holdback_every",
        required=False,
        allow_null=True,
        help_text=(
            "after the decision, one block in this many keeps running pull; left out without a holdback"
        ),
    )
    schedule = ScheduleJson()
    dropped = DroppedJson()
    winner = serializers.CharField(
        allow_null=True, help_text="the winning arm for the objective, once decided"
    )
    decidedAt = Time(source="decided_at", allow_null=True)
    analysis = AnalysisJson(
        allow_null=True,
        help_text="the newest analysis after a block: per arm, each against pull "
        "with a 95% interval, blocks still needed, the guardrail's drops",
    )
    holdback = AnalysisJson(
        required=False,
        allow_null=True,
        help_text="the holdback's newest figure: the board's formula against pull over its blocks",
    )
    startsAt = Time(source="starts_at")
    endsAt = Time(source="ends_at")
    stoppedAt = Time(source="stopped_at", allow_null=True)
    createdBy = serializers.CharField(source="created_by")
    createdAt = Time(source="created_at")

    omit_when_null = ("holdbackEvery", "holdback")
