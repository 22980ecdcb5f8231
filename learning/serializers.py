"""The learning routes' answers, as the schema documents them.

`learning.store.model_json` and `shadow_report_json` build the answers; these serializers say
their shape; tests/contract checks real answers against it.
"""
from __future__ import annotations

from rest_framework import serializers


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
    metrics = serializers.DictField(help_text="the holdout's metrics and calibration")
    target = serializers.ChoiceField(["claimed", "succeeded"],
                                     help_text="what it learned and is judged on")


class ExcludedSerializer(serializers.Serializer):
    modelPlaced = serializers.IntegerField()
    noChance = serializers.IntegerField()
    noChoice = serializers.IntegerField()
    runUnknown = serializers.IntegerField(help_text="target succeeded: a held claim whose run is not known yet")


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
        allow_null=True, help_text="the model's interval's lower end less the formula's rate, in points: what the gate reads")
    notReplayed = NotReplayedSerializer(many=True)


class ShadowReportSerializer(serializers.Serializer):
    """The model against the formula in its settled shadow decisions, and the gate."""

    model = serializers.CharField()
    version = serializers.IntegerField()
    latest = serializers.BooleanField()
    credit = serializers.ChoiceField(
        ["lower-bound", "estimate"],
        help_text="SUPERDISPATCH_LEARNED_CREDIT: how the model's disagreements are credited")
    target = serializers.ChoiceField(["claimed", "succeeded"],
                                     help_text="what a hit is: a claim, or a claim whose run succeeded")
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
