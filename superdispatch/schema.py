"""The OpenAPI schema's reading of our views.

The operator API's views are plain APIViews whose answers are built by hand, so
drf-spectacular cannot guess their serializers: it warns (W002) and leaves the views out,
and it names a collection and one of its items alike (`…_retrieve`), then warns of the
collision (W001). This schema class reads them as they are instead:

- a view that names no serializer answers a JSON object (its fields are in docs/api.md);
  a view or method that declares a serializer or an `extend_schema` response keeps it;
- a GET at a path with no parameter whose last segment is plural (`/v1/boards`,
  `/v1/decisions`) reads a collection, answered under its plural name: its operation is
  `…_list`, and the GET of one item keeps `…_retrieve`.

And it documents what every operation can answer besides its success, so the contract is
complete (schemathesis checks it, `--checks all`, in tests/contract):

- a path parameter carries its pattern (`brd_…`, `pld_`/`sug_`/`mdl_` and 24 hex digits);
- every route answers `{"error": {"code", "message"}}` for 406 (an Accept it cannot answer)
  and 404 where its path has an id; an operator route also for 400 (a query or body it
  cannot read);
- a route that takes the operator token answers a refusal as a bare 401, with no body, and
  a 403 (the error body with `scope`) to a credential without the scope the route needs,
  or to a write by a staff session without its CSRF token (the browsable API); its
  description names that scope.
"""
from __future__ import annotations

from drf_spectacular import openapi
from drf_spectacular.types import OpenApiTypes
from rest_framework.generics import GenericAPIView

from common.schema import FORBIDDEN, REFUSED, error
from common.scopes import needed_scope
from records.api import query
from records.ids import id_pattern

PATH_PATTERNS = {  # anchored: an OpenAPI pattern matches anywhere unless told otherwise
    "board_id": f"^{query.BOARD_ID.pattern}$",
    "decision_id": f"^{id_pattern('pld')}$",
    "suggestion_id": f"^{id_pattern('sug')}$",
    "model_id": f"^{id_pattern('mdl')}$",
}


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

    def map_parsers(self) -> list[str]:
        # A body is JSON. The parser that also reads one sent under another content type
        # (`curl -d`, common.parsers) is leniency, not a second format of the contract.
        return [media for media in super().map_parsers() if media != "*/*"]

    def _resolve_path_parameters(self, variables):
        parameters = super()._resolve_path_parameters(variables)
        for parameter in parameters:
            pattern = PATH_PATTERNS.get(parameter["name"])
            if pattern:
                parameter["schema"] = {"type": "string", "pattern": pattern}
        return parameters

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if isinstance(serializer, query.Body):
            schema["additionalProperties"] = False  # an unknown field is a 400 naming it
        return schema

    def _error_responses(self) -> dict[str, object]:
        errors: dict[str, object] = {
            "406": error("the Accept header asks for a type this route cannot answer"),
        }
        if "{" in self.path:
            errors["404"] = error("no such item, or no such route")
        if self.view.get_authenticators():  # every operator route reads its query (and body)
            errors["400"] = error("a parameter, the query or the body is malformed or "
                                  "unknown; the message names it")
            errors["401"] = REFUSED
            errors["403"] = FORBIDDEN
        return errors

    def get_description(self) -> str:
        scope = needed_scope(self.view, self.method) if self.view.get_authenticators() else None
        needs = f"Needs the scope `{scope}`." if scope else ""
        return "\n\n".join(part for part in (super().get_description(), needs) if part)

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code, answer in self._error_responses().items():
            if code not in responses:
                responses[code] = self._get_response_for_code(answer, code,
                                                              direction=direction)
        return dict(sorted(responses.items()))
