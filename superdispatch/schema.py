"""The OpenAPI schema's reading of our views.

The operator API's views are plain APIViews whose answers are built by hand, so
drf-spectacular cannot guess their serializers: it warns (W002) and leaves the views out,
and it names a collection and one of its items alike (`…_retrieve`), then warns of the
collision (W001). This schema class reads them as they are instead:

- a view that names no serializer answers a JSON object (its fields are in the README);
  a view or method that declares a serializer or an `extend_schema` response keeps it;
- a GET at a path with no parameter whose last segment is plural (`/v1/boards`,
  `/v1/decisions`) reads a collection, answered under its plural name: its operation is
  `…_list`, and the GET of one item keeps `…_retrieve`.
"""
from __future__ import annotations

from drf_spectacular import openapi
from drf_spectacular.types import OpenApiTypes
from rest_framework.generics import GenericAPIView


class AutoSchema(openapi.AutoSchema):
    def _get_serializer(self):
        view = self.view
        names_one = isinstance(view, GenericAPIView) or any(
            hasattr(view, name) for name in ("get_serializer", "get_serializer_class",
                                             "serializer_class"))
        if names_one:
            return super()._get_serializer()
        return OpenApiTypes.OBJECT

    def get_operation_id(self) -> str:
        operation_id = super().get_operation_id()
        path = self.path.rstrip("/")
        last = path.rsplit("/", 1)[-1]
        if (self.method == "GET" and "{" not in path and last.endswith("s")
                and operation_id.endswith("_retrieve")):
            return operation_id.removesuffix("_retrieve") + "_list"
        return operation_id
