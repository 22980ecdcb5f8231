"""Dataset and model routes."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from common.errors import ApiError, bad_request
from learning import actions, dataset, store
from learning.core.train import TrainingError
from learning.models import LearnedModel
from records import query
from common.views import OperatorView

MAX_SEED = 2**53 - 1  # the largest integer every JSON reader keeps exactly


def _model(model_id: str) -> LearnedModel:
    return query.by_id(LearnedModel.objects, "mdl", model_id, "model")


class Dataset(OperatorView):
    @extend_schema(summary="The labelled rows, oldest first",
                   parameters=[OpenApiParameter("since", str),
                               OpenApiParameter("format", str, enum=["jsonl", "json"])])
    def get(self, request):
        params = query.read_query(request.query_params, {"since": query.parse_time,
                                                         "format": query.one_of("jsonl", "json")})
        since = params.get("since")
        if params.get("format", "jsonl") == "json":
            return StreamingHttpResponse(dataset.json_document(since),
                                         content_type="application/json")
        return StreamingHttpResponse(dataset.jsonl(since), content_type="application/x-ndjson")


def _train_body(body: Any) -> tuple[datetime | None, int]:
    """(since, seed) from the body `{since?, seed?}`; a bad field is a 400 naming it."""
    if not isinstance(body, dict):
        raise bad_request("bad-body", "the body is a JSON object: {since?, seed?}")
    unknown = sorted(set(body) - {"since", "seed"})
    if unknown:
        raise bad_request("unknown-field", f"unknown field {unknown[0]!r}; the body takes since, seed")
    since = body.get("since")
    if since is not None:
        try:
            since = query.parse_time(since)
        except (ValueError, TypeError, AttributeError):
            raise bad_request("bad-field", f"since must be {query.parse_time.rule}") from None
    seed = body.get("seed")
    if seed is None:
        seed = 0
    elif isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise bad_request("bad-field", f"seed must be an integer from 0 to {MAX_SEED}")
    return since, seed


class Train(OperatorView):
    @extend_schema(summary="Train and store a model: body {since?, seed?}")
    def post(self, request):
        query.read_query(request.query_params, {})
        since, seed = _train_body(request.data if request.body else {})
        try:
            model = actions.do_train(since, seed, now=timezone.now())
        except TrainingError as err:
            raise ApiError(422, err.code, err.message) from None
        return Response({"model": store.model_json(model)}, status=201)


class Models(OperatorView):
    @extend_schema(summary="Every stored model, newest version first")
    def get(self, request):
        query.read_query(request.query_params, {})
        return Response({"models": [store.model_json(m) for m in LearnedModel.objects.all()]})


class ModelDetail(OperatorView):
    @extend_schema(summary="One model, with its metrics")
    def get(self, request, model_id: str):
        query.read_query(request.query_params, {})
        return Response({"model": store.model_json(_model(model_id))})


class ShadowReport(OperatorView):
    @extend_schema(summary="The model against the formula, in shadow")
    def get(self, request, model_id: str):
        query.read_query(request.query_params, {})
        report = store.shadow_report_json(_model(model_id), settings.SUPERDISPATCH)
        return Response({"shadowReport": report})
