"""The learning routes' answers, as the schema documents them.

`learning.store.model_json` and `shadow_report_json` build the answers; these serializers say
their shape; tests/contract checks real answers against it.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from learning.core.labels import LABELS
from records.models.decisions import OUTCOMES, TIERS
from records.serializers import (
    RUN_STATUSES,
    CapabilityJson,
    ScoreJson,
    StageHistoryJson,
    Time,
)


class CalibrationBinSerializer(serializers.Serializer):
    bin = serializers.IntegerField()
    lo = serializers.FloatField(help_text="the bin's lowest predicted probability")
    hi = serializers.FloatField(help_text="its highest (the last bin includes 1)")
    count = serializers.IntegerField(help_text="holdout rows predicted in the bin")
    meanPredicted = serializers.FloatField(allow_null=True, help_text="null: the bin is empty")
    observedRate = serializers.FloatField(allow_null=True, help_text="null: the bin is empty")


class MetricsSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="examples fitted on and held out")
    trainCount = serializers.IntegerField()
    holdoutCount = serializers.IntegerField()
    positives = serializers.IntegerField(help_text="examples whose target is 1")
    auc = serializers.FloatField(allow_null=True, help_text="on the holdout; null: one class")
    accuracy = serializers.FloatField(allow_null=True)
    logLoss = serializers.FloatField(allow_null=True)
    calibration = CalibrationBinSerializer(many=True)
    trainAuc = serializers.FloatField(allow_null=True)


class ModelSerializer(serializers.Serializer):
    """A stored model: its parameters, what it was fitted on, and its metrics."""

    id = serializers.CharField(help_text="mdl_ and 24 hex digits")
    version = serializers.IntegerField()
    features = serializers.ListField(child=serializers.CharField())
    means = serializers.ListField(child=serializers.FloatField())
    stds = serializers.ListField(child=serializers.FloatField())
    weights = serializers.ListField(child=serializers.FloatField())
    bias = serializers.FloatField()
    createdAt = serializers.DateTimeField()
    since = serializers.DateTimeField(allow_null=True)
    seed = serializers.IntegerField()
    decisions = serializers.IntegerField(help_text="settled decisions fitted on")
    firstDecisionAt = serializers.DateTimeField(allow_null=True)
    lastDecisionAt = serializers.DateTimeField(allow_null=True)
    iterations = serializers.IntegerField()
    learningRate = serializers.FloatField()
    l2 = serializers.FloatField()
    metrics = MetricsSerializer(help_text="the holdout's metrics and calibration")
    target = serializers.ChoiceField(["claimed", "succeeded"], help_text="what it learned and is judged on")


class ExcludedSerializer(serializers.Serializer):
    modelPlaced = serializers.IntegerField()
    noChance = serializers.IntegerField()
    noChoice = serializers.IntegerField()
    runUnknown = serializers.IntegerField(
        help_text="target succeeded: a held claim whose run is not known yet"
    )


class GateTestSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="min-rows, min-shadow or margin")
    passed = serializers.BooleanField()
    value = serializers.FloatField(allow_null=True)
    needed = serializers.FloatField()
    message = serializers.CharField()


class GateSerializer(serializers.Serializer):
    mode = serializers.CharField(help_text="SUPERDISPATCH_LEARNED: off, shadow or on")
    minRows = serializers.IntegerField()
    minShadow = serializers.IntegerField()
    marginPct = serializers.FloatField()
    passed = serializers.BooleanField()
    failing = serializers.CharField(allow_null=True)
    tests = GateTestSerializer(many=True)


class IntervalSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)


class NotReplayedSerializer(serializers.Serializer):
    why = serializers.CharField()
    decisions = serializers.IntegerField()


class ShadowEstimateSerializer(serializers.Serializer):
    """With `credit` estimate: the what-if estimator's success for each choice, with its 95% interval."""

    estimator = serializers.CharField(allow_null=True, help_text="doubly-robust or model-based")
    enough = serializers.BooleanField(help_text="at least minDecisions judged")
    minDecisions = serializers.IntegerField()
    formula = IntervalSerializer(allow_null=True, help_text="the formula's success, as measured")
    model = IntervalSerializer(allow_null=True, help_text="the model's success, estimated")
    marginLowPct = serializers.FloatField(
        allow_null=True,
        help_text="the model's interval's lower end less the formula's rate, in points: what the gate reads",
    )
    notReplayed = NotReplayedSerializer(many=True)


class ShadowReportSerializer(serializers.Serializer):
    """The model against the formula in its settled shadow decisions, and the gate."""

    model = serializers.CharField()
    version = serializers.IntegerField()
    latest = serializers.BooleanField()
    credit = serializers.ChoiceField(
        ["lower-bound", "estimate"],
        help_text="SUPERDISPATCH_LEARNED_CREDIT: how the model's disagreements are credited",
    )
    target = serializers.ChoiceField(
        ["claimed", "succeeded"], help_text="what a hit is: a claim, or a claim whose run succeeded"
    )
    decisions = serializers.IntegerField()
    agree = serializers.IntegerField()
    disagree = serializers.IntegerField()
    formulaClaims = serializers.IntegerField()
    modelClaims = serializers.IntegerField()
    formulaSucceeded = serializers.IntegerField(help_text="the formula's claims whose run succeeded")
    modelSucceeded = serializers.IntegerField(help_text="the model's claims whose run succeeded")
    modelClaimedAnyway = serializers.IntegerField()
    formulaRate = serializers.FloatField(allow_null=True)
    modelRate = serializers.FloatField(allow_null=True)
    marginPct = serializers.FloatField(allow_null=True)
    excluded = ExcludedSerializer()
    estimate = ShadowEstimateSerializer(allow_null=True, help_text="null but with credit estimate")
    gate = GateSerializer()


# --- The dataset, as GET /v1/dataset answers it (learning.core.rows writes each row) --------


@extend_schema_field(
    {
        "type": "object",
        "description": "each filter's verdict, by filter: "
        "true when the candidate passed it, else its reason code",
        "additionalProperties": {"oneOf": [{"type": "boolean", "enum": [True]}, {"type": "string"}]},
    }
)
class FilterMarks(serializers.JSONField):
    """`{filter: true | reason}`."""


class PoolSerializer(serializers.Serializer):
    """How busy the pool was when the decision was made."""

    candidates = serializers.IntegerField(help_text="agents considered")
    inSet = serializers.IntegerField(help_text="of those, on the lane's set (roster or named)")
    eligible = serializers.IntegerField(help_text="of those, eligible")
    busy = serializers.IntegerField(help_text="in the set, and turned away for their load")


class DatasetRowSerializer(serializers.Serializer):
    """One settled decision's candidate, as learned routing reads it (schema 2)."""

    decisionId = serializers.CharField()
    boardId = serializers.CharField()
    cardId = serializers.CharField()
    stageKey = serializers.CharField()
    capability = CapabilityJson(allow_null=True)
    policy = serializers.CharField(help_text="the formula that decided, name@version")
    tier = serializers.ChoiceField(TIERS, allow_null=True)
    tierStep = serializers.IntegerField(allow_null=True)
    createdAt = Time(help_text="when the decision was made")
    hour = serializers.IntegerField(min_value=0, max_value=23, help_text="its hour, in UTC")
    outcome = serializers.ChoiceField(OUTCOMES, help_text="what became of the card")
    outcomeBy = serializers.CharField(allow_null=True, help_text="who claimed it")
    outcomeAt = Time(allow_null=True, help_text="when it was settled")
    runStatus = serializers.ChoiceField(
        RUN_STATUSES, allow_null=True, help_text="the claim's run; null until known"
    )
    runVerdictMark = serializers.FloatField(allow_null=True)
    runEndedAt = Time(allow_null=True, help_text="when the claim's run ended")
    agentId = serializers.CharField()
    source = serializers.ChoiceField(["roster", "direct"])
    chosen = serializers.BooleanField()
    eligible = serializers.BooleanField()
    filters = FilterMarks()
    score = ScoreJson(allow_null=True)
    stageHistory = StageHistoryJson(allow_null=True)
    pool = PoolSerializer()
    label = serializers.ChoiceField(LABELS, help_text="what the candidate teaches")
    target = serializers.IntegerField(
        allow_null=True,
        min_value=0,
        max_value=1,
        help_text="1 or 0 under the learned target; null: not trained on",
    )
    features = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="the model's inputs; null when not eligible",
    )


class DatasetSerializer(serializers.Serializer):
    """The dataset as one document (`format=json`)."""

    schema = serializers.IntegerField(help_text="the rows' schema: 2")
    target = serializers.ChoiceField(["claimed", "succeeded"], help_text="the learned target")
    rows = DatasetRowSerializer(many=True)
    decisions = serializers.IntegerField(help_text="settled decisions read")
    truncated = serializers.BooleanField(
        help_text="whether settled decisions beyond the cap were left for a later read"
    )
