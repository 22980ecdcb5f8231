"""Switchback experiments: start one (scope `boards`), read them (scope `read`). Stopping is
`manage.py experiment stop` or the admin; see docs/api.md#experiments."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone
from drf_spectacular.utils import extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from access.audit import of_request
from common.errors import bad_request
from common.scopes import BOARDS, READ
from common.views import OperatorView
from placement import switchback
from records.api import query
from records.api.query import BOARD_ID, Body, JsonInteger, Matching, NoQuery
from records.experiment_serializers import ExperimentSerializer
from records.models import Experiment
from records.serializers import TimeInput
from records.store.actions.experiments import (
    BLOCK_SECONDS,
    BURN_IN_SECONDS,
    MAX_BLOCKS,
    MAX_BOARDS,
    ExperimentError,
    Plan,
    arm_names,
    do_start_experiment,
)

ONE = inline_serializer("ExperimentAnswer", {"experiment": ExperimentSerializer()})
MANY = inline_serializer("ExperimentsAnswer", {"experiments": ExperimentSerializer(many=True)})
MAX_SEED = 2**53 - 1  # the largest integer every JSON reader keeps exactly


@extend_schema_field({"type": "string", "enum": list(arm_names())})
class ArmName(serializers.CharField):
    """An arm: a declared formula's recorded name, or pull (the start names the one it does
    not know, and the ones it does)."""


class GuardrailBody(serializers.Serializer):
    successDrop = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
    leadRatio = serializers.FloatField(required=False, min_value=1.0, max_value=10.0)


class ExperimentBody(Body):
    boards = serializers.ListField(
        child=Matching(BOARD_ID),
        min_length=1,
        max_length=MAX_BOARDS,
        help_text="a list of board ids (brd_…), whole clusters of boards that share agents",
    )
    arms = serializers.ListField(
        child=ArmName(max_length=80),
        min_length=2,
        max_length=10,
        help_text="a list of 2 to 10 arms, each a declared formula's recorded name or pull, pull among them",
    )
    objective = serializers.ChoiceField(switchback.OBJECTIVES, help_text="one of success, lead")
    blockMinutes = JsonInteger(min_value=1, max_value=1440, required=False, default=BLOCK_SECONDS // 60)
    blocks = JsonInteger(min_value=1, max_value=MAX_BLOCKS, required=False)
    endsAt = TimeInput(required=False)
    seed = JsonInteger(min_value=0, max_value=MAX_SEED, required=False)
    guardrail = GuardrailBody(required=False, help_text="{successDrop?: 0 to 1, leadRatio?: 1 to 10}")
    holdbackEvery = JsonInteger(min_value=2, max_value=100, required=False)
    burnInSeconds = JsonInteger(min_value=0, max_value=86400, required=False, default=BURN_IN_SECONDS)


def plan_of(body: dict) -> Plan:
    """The plan a request body (or a command's options, named alike) asks for."""
    guardrail = switchback.Guardrail()
    given = body.get("guardrail") or {}
    return Plan(
        boards=tuple(body["boards"]),
        arms=tuple(body["arms"]),
        objective=body["objective"],
        block_seconds=body.get("blockMinutes", BLOCK_SECONDS // 60) * 60,
        blocks=body.get("blocks"),
        ends_at=body.get("endsAt"),
        seed=body.get("seed"),
        success_drop=given.get("successDrop", guardrail.success_drop),
        lead_ratio=given.get("leadRatio", guardrail.lead_ratio),
        holdback_every=body.get("holdbackEvery"),
        burn_in_seconds=body.get("burnInSeconds", BURN_IN_SECONDS),
    )


def refused(err: ExperimentError):
    """An experiment that cannot start as asked: a 400 naming the field and why."""
    return bad_request("bad-experiment", f"{err.field}: {err.message}")


class Experiments(OperatorView):
    scopes = {"GET": READ, "POST": BOARDS}

    @property
    def takes_body(self) -> bool:
        # The start reads its body; the list, as every other read, refuses one.
        return self.request.method == "POST"

    @extend_schema(summary="Every experiment, newest first", responses=MANY)
    def get(self, request):
        NoQuery.read(request.query_params)
        return Response({"experiments": ExperimentSerializer(Experiment.objects.all(), many=True).data})

    @extend_schema(
        summary="Start a switchback experiment: its schedule is drawn now and stored",
        request=ExperimentBody,
        responses={201: ONE},
    )
    def post(self, request):
        NoQuery.read(request.query_params)
        body = ExperimentBody.read(request.data if request.body else {})
        now: datetime = timezone.now()
        try:
            experiment = do_start_experiment(plan_of(body), now, by=of_request(request))
        except ExperimentError as err:
            raise refused(err) from None
        return Response({"experiment": ExperimentSerializer(experiment).data}, status=201)


class ExperimentDetail(OperatorView):
    scopes = {"GET": READ}

    @extend_schema(summary="One experiment (exp_…)", responses=ONE)
    def get(self, request, experiment_id: str):
        NoQuery.read(request.query_params)
        experiment = query.by_id(Experiment.objects, "exp", experiment_id, "experiment")
        return Response({"experiment": ExperimentSerializer(experiment).data})
