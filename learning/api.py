"""Dataset and model routes."""

from __future__ import annotations

import threading
from typing import Iterator

from django.conf import settings
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework.response import Response

from access.audit import of_request
from common.errors import ApiError, unavailable
from common.schema import error
from common.scopes import READ, TRAIN
from common.views import OperatorView
from learning import actions, dataset, store
from learning.core.train import TrainingError
from learning.models import LearnedModel
from learning.serializers import DatasetSerializer, ModelSerializer, ShadowReportSerializer
from records.api import query
from records.api.query import Body, JsonInteger, NoQuery, OneOf, Query
from records.serializers import TimeInput

MAX_SEED = 2**53 - 1  # the largest integer every JSON reader keeps exactly


ONE_MODEL = inline_serializer("ModelAnswer", {"model": ModelSerializer()})


def _model(model_id: str) -> LearnedModel:
    return query.by_id(LearnedModel.objects, "mdl", model_id, "model")


class DatasetQuery(Query):
    since = TimeInput(required=False)
    format = OneOf(("jsonl", "json"), default="jsonl")


class TrainBody(Body):
    since = TimeInput(required=False, allow_null=True)  # only decisions created at or after it
    seed = JsonInteger(min_value=0, max_value=MAX_SEED, allow_null=True, default=0)

    def validate_seed(self, value: int | None) -> int:
        return 0 if value is None else value


# A stream holds one of the server's threads for as long as its reader takes (the front paces
# it by the reader), so a process streams one dataset at a time: its other threads stay free
# for every other request, and a second stream meanwhile is a 503 to retry.
STREAMS_AT_ONCE = 1
_streams = threading.BoundedSemaphore(STREAMS_AT_ONCE)


class _Stream:
    """A dataset's pieces, holding a stream's place until read to the end or closed (the server
    closes every answer it sends, read whole or not)."""

    def __init__(self, pieces: Iterator[bytes]):
        self.pieces, self.held = pieces, True

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self.pieces
        finally:
            self.close()

    def close(self) -> None:
        if self.held:
            self.held = False
            _streams.release()

    __del__ = close  # an answer dropped unsent (its request failed after the view) frees it too


class Dataset(OperatorView):
    scopes = {"GET": READ}

    @extend_schema(
        summary="The labelled rows, oldest first",
        parameters=[DatasetQuery],
        responses={
            # NDJSON first: a generated client that reads it as bytes (see
            # docs/api.md) then reads the default format without parsing it as JSON.
            (200, "application/x-ndjson"): OpenApiResponse(
                {"type": "string", "format": "binary"},
                description="format=jsonl (the default): one DatasetRow a line; "
                "format=json: a Dataset document",
            ),
            (200, "application/json"): OpenApiResponse(
                DatasetSerializer, description="format=json: one document"
            ),
        },
    )
    def get(self, request):
        """The labelled rows, one per settled decision and candidate. `format=jsonl` (the
        default) answers `application/x-ndjson`: one `DatasetRow` JSON object a line.
        `format=json` answers `application/json`: one `Dataset` document of the same rows."""
        params = DatasetQuery.read(request.query_params)
        since = params.get("since")
        goal = settings.SUPERDISPATCH.learned_target
        if not _streams.acquire(blocking=False):
            return unavailable(
                "busy", "this server is streaming the dataset to another reader; retry shortly"
            )
        if params["format"] == "json":
            return StreamingHttpResponse(
                _Stream(dataset.json_document(since, goal)), content_type="application/json"
            )
        return StreamingHttpResponse(_Stream(dataset.jsonl(since, goal)), content_type="application/x-ndjson")


class Train(OperatorView):
    scopes = {"POST": TRAIN}
    takes_body = True

    @extend_schema(
        summary="Train and store a model: body {since?, seed?}",
        request=TrainBody,
        responses={
            201: ONE_MODEL,
            422: error(
                "training refused: too few labelled rows (too-few-rows, "
                "empty-holdout), one outcome only (single-class), or a bad row"
            ),
        },
    )
    def post(self, request):
        NoQuery.read(request.query_params)
        body = TrainBody.read(request.data if request.body else {})
        try:
            model = actions.do_train(
                body.get("since"),
                body["seed"],
                now=timezone.now(),
                target=settings.SUPERDISPATCH.learned_target,
                by=of_request(request),
            )
        except TrainingError as err:
            raise ApiError(422, err.code, err.message) from None
        return Response({"model": store.model_json(model)}, status=201)


class Models(OperatorView):
    scopes = {"GET": READ}

    @extend_schema(
        summary="Every stored model, newest version first",
        responses=inline_serializer("ModelsAnswer", {"models": ModelSerializer(many=True)}),
    )
    def get(self, request):
        NoQuery.read(request.query_params)
        return Response({"models": [store.model_json(m) for m in LearnedModel.objects.all()]})


class ModelDetail(OperatorView):
    scopes = {"GET": READ}

    @extend_schema(summary="One model, with its metrics", responses=ONE_MODEL)
    def get(self, request, model_id: str):
        NoQuery.read(request.query_params)
        return Response({"model": store.model_json(_model(model_id))})


class ShadowReport(OperatorView):
    scopes = {"GET": READ}

    @extend_schema(
        summary="The model against the formula, in shadow",
        responses=inline_serializer("ShadowReportAnswer", {"shadowReport": ShadowReportSerializer()}),
    )
    def get(self, request, model_id: str):
        NoQuery.read(request.query_params)
        report = store.shadow_report_json(_model(model_id), settings.SUPERDISPATCH)
        return Response({"shadowReport": report})
