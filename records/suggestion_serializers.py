"""Roster suggestions and supply proposals as the operator API answers them: each kind's own
fields, declared once, over the record's building blocks (`records/serializers.py`)."""

from __future__ import annotations

from functools import cache
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from records.models.suggestions import SUGGESTION_KINDS
from records.serializers import CapabilityJson, StringsJson, Time, word_list


class SuggestedAgentSerializer(serializers.Serializer):
    agentId = serializers.CharField()
    principalId = serializers.CharField(allow_null=True)
    stationId = serializers.CharField(allow_null=True)


class InDocumentedOrder(serializers.JSONField):
    """JSON kept in the store, answered with its keys in the order its schema documents.

    PostgreSQL's jsonb keeps an object's keys in an order of its own (shorter keys first)
    where SQLite keeps them as written, so without this one suggestion would read differently
    on the two stores. Keys the schema does not name keep their place after the named ones.
    """

    schema: type[serializers.Serializer]

    def to_representation(self, value: Any) -> Any:
        value = super().to_representation(value)
        order = _keys(self.schema)
        if isinstance(value, dict):
            return _ordered(value, order)
        if isinstance(value, list):
            return [_ordered(item, order) if isinstance(item, dict) else item for item in value]
        return value


@cache
def _keys(schema: type[serializers.Serializer]) -> tuple[str, ...]:
    return tuple(schema().fields)


def _ordered(value: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    named = {key: value[key] for key in order if key in value}
    return named | {key: item for key, item in value.items() if key not in named}


@extend_schema_field(SuggestedAgentSerializer(many=True))
class AgentsJson(InDocumentedOrder):
    """Agents, as a suggestion names them."""

    schema = SuggestedAgentSerializer


class TargetSerializer(serializers.Serializer):
    """What a supply proposal asks for; each kind answers its own keys."""

    capability = CapabilityJson(
        required=False, allow_null=True, help_text="add-station: the capability the station serves"
    )
    isolation = serializers.CharField(
        required=False, allow_null=True, help_text="add-station, move-to-host: the isolation"
    )
    models = word_list(required=False, help_text="add-station: the models it needs")
    tools = word_list(required=False, help_text="add-station: the tools it needs")
    credentials = word_list(required=False, help_text="add-station: the credentials it needs")
    agentId = serializers.CharField(required=False, help_text="change-model: the agent")
    stationId = serializers.CharField(required=False, help_text="change-model, move-to-host: the station")
    model = serializers.CharField(
        required=False, allow_null=True, help_text="change-model, move-to-host: the model"
    )
    occupant = serializers.CharField(
        required=False, allow_null=True, help_text="move-to-host: the agent in the station now"
    )
    runtime = serializers.CharField(
        required=False, allow_null=True, help_text="move-to-host: the station's runtime"
    )
    harness = serializers.CharField(
        required=False, allow_null=True, help_text="move-to-host: the station's harness"
    )


@extend_schema_field(TargetSerializer(allow_null=True))
class TargetJson(InDocumentedOrder):
    """What the proposal asks for; null for raise-capacity."""

    schema = TargetSerializer


class EffectSerializer(serializers.Serializer):
    cards = serializers.IntegerField(help_text="cards that went unplaced for want of it")
    agents = serializers.IntegerField(help_text="agents it would make able to take them")
    summary = serializers.CharField(help_text="the same, in words")


@extend_schema_field(EffectSerializer(allow_null=True))
class EffectJson(InDocumentedOrder):
    """What the proposal would change."""

    schema = EffectSerializer


ROSTER_FIELDS = ("capability", "rostered", "candidates", "reasons", "reason")
SUPPLY_FIELDS = ("rationale", "target", "estimatedEffect", "howToApply", "registry")


class SuggestionSerializer(serializers.Serializer):
    """A roster suggestion or a supply proposal; each answers its own kind's fields."""

    id = serializers.CharField()
    kind = serializers.ChoiceField(
        SUGGESTION_KINDS,
        help_text="add-agent-to-board and "
        "lane-single-point are roster suggestions; the rest, supply "
        "proposals",
    )
    boardId = serializers.CharField(source="board_id")
    stageKey = serializers.CharField(source="stage_key")
    # Roster suggestions
    capability = CapabilityJson(required=False, allow_null=True)
    rostered = StringsJson(required=False, help_text="the agents on the lane's roster")
    candidates = AgentsJson(
        required=False, help_text="agents off the roster that could take the lane's cards"
    )
    reasons = StringsJson(required=False, help_text="the rules that found it")
    reason = serializers.CharField(required=False, help_text="the suggestion, in words")
    # Supply proposals
    rationale = serializers.CharField(required=False, help_text="why, in words")
    target = TargetJson(required=False, allow_null=True)
    estimatedEffect = EffectJson(source="estimated_effect", required=False, allow_null=True)
    howToApply = serializers.CharField(
        source="how_to_apply", required=False, help_text="what to do, and where"
    )
    registry = serializers.ChoiceField(
        ["read", "unread"], required=False, help_text="whether AgentPod's station registry was read"
    )
    # Both
    evidence = StringsJson(help_text="the newest decisions that bear it out (pld_…)")
    evidenceCount = serializers.IntegerField(source="evidence_count")
    firstSeenAt = Time(source="first_seen_at", help_text="when it was first found")
    lastSeenAt = Time(source="last_seen_at", help_text="when it was last found")
    resolvedAt = Time(
        source="resolved_at", allow_null=True, help_text="when it stopped being found; null: it still is"
    )
    dismissedAt = Time(
        source="dismissed_at", allow_null=True, help_text="when a person dismissed it; null: nobody has"
    )

    def to_representation(self, instance) -> dict[str, Any]:
        out = super().to_representation(instance)
        for name in ROSTER_FIELDS if instance.is_supply else SUPPLY_FIELDS:
            del out[name]
        return out
