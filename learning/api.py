"""Dataset and model routes."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.views import APIView

from records import query
from superdispatch.errors import ApiError, bad_request


def _pending(what: str) -> ApiError:
    return ApiError(501, "not-implemented", f"{what} is not built yet")


def _model_id(model_id: str) -> str:
    if not query.re.fullmatch(r"mdl_[0-9a-f]{24}", model_id):
        raise bad_request("bad-id", "a model id is mdl_ and 24 hex digits")
    return model_id


class Dataset(APIView):
    @extend_schema(summary="The labelled rows, oldest first",
                   parameters=[OpenApiParameter("since", str),
                               OpenApiParameter("format", str, enum=["jsonl", "json"])])
    def get(self, request):
        query.read_query(request.query_params, {"since": query.parse_time,
                                                "format": query.one_of("jsonl", "json")})
        raise _pending("the dataset")


class Train(APIView):
    @extend_schema(summary="Train and store a model: body {since?, seed?}")
    def post(self, request):
        body = request.data if request.body else {}
        if not isinstance(body, dict):
            raise bad_request("bad-body", "the body is a JSON object: {since?, seed?}")
        raise _pending("training")


class Models(APIView):
    @extend_schema(summary="Every stored model")
    def get(self, request):
        query.read_query(request.query_params, {})
        raise _pending("the model store")


class ModelDetail(APIView):
    @extend_schema(summary="One model, with its metrics")
    def get(self, request, model_id: str):
        _model_id(model_id)
        raise _pending("the model store")


class ShadowReport(APIView):
    @extend_schema(summary="The model against the formula, in shadow")
    def get(self, request, model_id: str):
        _model_id(model_id)
        raise _pending("the shadow report")
