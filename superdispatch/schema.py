"""The OpenAPI schema's reading of our views.

The operator API's views are plain APIViews whose answers are built by hand, so
drf-spectacular cannot guess their serializers: it warns (W002) and leaves the views out,
and it names a collection and one of its items alike (`…_retrieve`), then warns of the
collision (W001). This schema class reads them as they are instead:

- a view that names no serializer answers a JSON object (its fields are in docs/api.md);
  a view or method that declares a serializer or an `extend_schema` response keeps it;
- each operation has a name a generated client's method can carry (`listBoards`,
  `dismissSuggestion`: OPERATION_IDS), and the tag of the resource it reads or writes (the
  path's first segment after `/v1`), so a client groups its methods as the README does.

And it documents what every operation can answer besides its success, so the contract is
complete (schemathesis checks it, `--checks all`, in tests/contract):

- a path parameter carries its pattern (`brd_…`, `pld_`/`sug_`/`mdl_` and 24 hex digits);
- every route answers `{"error": {"code", "message"}}` for 406 (an Accept it cannot answer)
  and 404 where its path has an id; an operator route also for 400 (a query or body it
  cannot read);
- a route that takes the operator token answers a refusal as a bare 401, with no body, and
  a 403 (the error body with `scope`) to a credential without the scope the route needs,
  or to a write by a staff session without its CSRF token (the browsable API); its
  description names that scope; and a 503 with Retry-After while the store cannot be reached
  or a statement ran past the request's budget.

After generation, `finish` (a postprocessing hook) makes what drf-spectacular writes pass
Redocly's and Spectral's rules, as tests/contract/test_schema_lint.py runs them, and read
right by a generated client: a nullable reference is one of it or `Null`, an operation open
to anyone says so (`security: []`), the schema names the server it was read from, each 503
declares its Retry-After, and each answer carries an example drawn from its own schema.
"""

from __future__ import annotations

import inspect

from drf_spectacular import openapi
from drf_spectacular.types import OpenApiTypes
from rest_framework.generics import GenericAPIView

from common.schema import FORBIDDEN, REFUSED, error
from common.scopes import needed_scope
from placement import formulas
from records.api import query
from records.ids import id_pattern

PATH_PATTERNS = {  # anchored: an OpenAPI pattern matches anywhere unless told otherwise
    "board_id": f"^{query.BOARD_ID.pattern}$",
    "decision_id": f"^{id_pattern('pld')}$",
    "suggestion_id": f"^{id_pattern('sug')}$",
    "model_id": f"^{id_pattern('mdl')}$",
    "experiment_id": f"^{id_pattern('exp')}$",
}


# Each operation's name, as a generated client calls it. A route added without one is named
# after its path (`v1_experiments_list`), and test_schema_contract asks for a name here.
OPERATION_IDS = {
    ("GET", "/healthz"): "health",
    ("POST", "/v1/relay/events"): "receiveRelayEvent",
    ("GET", "/v1/boards"): "listBoards",
    ("GET", "/v1/boards/{board_id}"): "getBoard",
    ("PUT", "/v1/boards/{board_id}"): "optInBoard",
    ("DELETE", "/v1/boards/{board_id}"): "optOutBoard",
    ("GET", "/v1/decisions"): "listDecisions",
    ("GET", "/v1/decisions/{decision_id}"): "getDecision",
    ("GET", "/v1/suggestions"): "listSuggestions",
    ("GET", "/v1/suggestions/{suggestion_id}"): "getSuggestion",
    ("POST", "/v1/suggestions/{suggestion_id}/dismiss"): "dismissSuggestion",
    ("GET", "/v1/what-if"): "whatIf",
    ("GET", "/v1/dataset"): "getDataset",
    ("POST", "/v1/models/train"): "trainModel",
    ("GET", "/v1/models"): "listModels",
    ("GET", "/v1/models/{model_id}"): "getModel",
    ("GET", "/v1/models/{model_id}/shadow-report"): "getShadowReport",
    ("GET", "/v1/audit"): "listAuditEntries",
    ("GET", "/v1/experiments"): "listExperiments",
    ("POST", "/v1/experiments"): "startExperiment",
    ("GET", "/v1/experiments/{experiment_id}"): "getExperiment",
}

# The resources, in the order a reader meets them; each operation carries its path's tag.
TAGS = [
    {"name": "boards", "description": "The boards SuperDispatch places cards on: opt in, opt out."},
    {"name": "decisions", "description": "Placement decisions: who was held for a card, and why."},
    {"name": "suggestions", "description": "Roster suggestions and supply proposals for a person."},
    {"name": "what-if", "description": "The recorded decisions replayed under another formula."},
    {
        "name": "experiments",
        "description": "Switchback experiments: formulas against pull on whole boards, by block.",
    },
    {"name": "dataset", "description": "The labelled rows learned routing trains on."},
    {"name": "models", "description": "Learned models: train one, read its metrics and shadow report."},
    {"name": "audit", "description": "Every write: who made it and what it changed."},
    {"name": "relay", "description": "The event relay's signed deliveries."},
    {"name": "health", "description": "Whether the service and its store answer."},
]


class AutoSchema(openapi.AutoSchema):
    def _get_serializer(self):
        view = self.view
        names_one = isinstance(view, GenericAPIView) or any(
            hasattr(view, name) for name in ("get_serializer", "get_serializer_class", "serializer_class")
        )
        if names_one:
            return super()._get_serializer()
        return OpenApiTypes.OBJECT

    def get_operation_id(self) -> str:
        return OPERATION_IDS.get((self.method, self.path)) or super().get_operation_id()

    def get_tags(self) -> list[str]:
        segments = [s for s in self.path.split("/") if s and s != "v1"]
        return ["health" if segments[0] == "healthz" else segments[0]]

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
        # A component is described by its own docstring, or by `about` where the docstring
        # speaks to readers of the code; never by a base class's (Row's, Columns').
        own = type(serializer).__dict__
        about = own.get("about") or own.get("__doc__")
        if about:
            schema["description"] = inspect.cleandoc(about)
        else:
            schema.pop("description", None)
        for name in getattr(serializer, "omit_when_null", ()):
            # Left out when it has nothing to say (records.serializers.Row): never null.
            schema["properties"][name].pop("nullable", None)
        return schema

    def _error_responses(self) -> dict[str, object]:
        errors: dict[str, object] = {
            "406": error("the Accept header asks for a type this route cannot answer"),
        }
        if "{" in self.path:
            errors["404"] = error("no such item, or no such route")
        if self.view.get_authenticators():  # every operator route reads its query (and body)
            errors["400"] = error(
                "a parameter, the query or the body is malformed or unknown; the message names it"
            )
            errors["401"] = REFUSED
            errors["403"] = FORBIDDEN
            errors["503"] = error(
                "try again after Retry-After: the store cannot be reached "
                "(store-unavailable); on PostgreSQL, a statement ran past the "
                "request's budget and was stopped (over-budget); for the "
                "dataset, this server is streaming it to another reader (busy)"
            )
        return errors

    def get_description(self) -> str:
        scope = needed_scope(self.view, self.method) if self.view.get_authenticators() else None
        needs = f"Needs the scope `{scope}`." if scope else ""
        return "\n\n".join(part for part in (super().get_description(), needs) if part)

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code, answer in self._error_responses().items():
            if code not in responses:
                responses[code] = self._get_response_for_code(answer, code, direction=direction)
        return dict(sorted(responses.items()))


def finish(result: dict, generator, request, public) -> dict:
    """The generated schema, made to pass Redocly's and Spectral's rules and read right by a
    generated client (the module's docstring says how)."""
    if request is not None:  # served: the origin it was read from
        server = request.build_absolute_uri("/").rstrip("/")
    else:  # `manage.py spectacular`: where `make run` serves
        server = "http://127.0.0.1:8796"
    result["servers"] = [{"url": server, "description": "this SuperDispatch"}]
    result["tags"] = TAGS
    for methods in result["paths"].values():
        for operation in methods.values():
            operation.setdefault("security", [])  # no credential: an open route, said so
            for code, answer in operation["responses"].items():
                if code == "503":
                    answer.setdefault("headers", {})["Retry-After"] = RETRY_AFTER
    components = result["components"]["schemas"]
    for schema in _schemas(components):
        for name, prop in (schema.get("properties") or {}).items():
            if list(prop) == ["allOf"] and len(prop["allOf"]) == 1:
                schema["properties"][name] = prop["allOf"][0]  # a reference, said directly
        if schema.get("nullable") and "type" not in schema and "allOf" in schema:
            # OpenAPI 3.0 reads `nullable` only beside a `type`, and a generated client reads
            # a typed nullable reference as never null: one of the reference or null, said so.
            del schema["nullable"]
            schema["oneOf"] = [*schema.pop("allOf"), {"$ref": "#/components/schemas/Null"}]
    components["Null"] = NULL
    for methods in result["paths"].values():
        for operation in methods.values():
            for code, answer in operation["responses"].items():
                for media in (answer.get("content") or {}).values():
                    media.setdefault("example", _example(media["schema"], components, code))
    return result


# --- An example for each answer ----------------------------------------------------------
# Drawn from the answer's own schema, so it is always one the schema accepts (Spectral checks
# it), with the words a real answer carries where a field's name says what it holds.

ERROR_EXAMPLES = {
    "400": ("bad-request", "limit: Ensure this value is less than or equal to 200."),
    "403": ("forbidden", "this route needs the scope boards"),
    "404": ("not-found", "no decision pld_0123456789abcdef01234567"),
    "406": ("not-acceptable", "Could not satisfy the request Accept header."),
    "413": ("too-large", "the body is larger than 64 KiB"),
    "422": ("too-few-rows", "training needs at least 20 labelled rows; the store has 4"),
    "503": ("store-unavailable", "the store cannot be reached; retry shortly"),
}
NAMED = {
    "boardId": "brd_review",
    "board": "brd_review",
    "cardId": "card_1014",
    "stageKey": "review",
    "agentId": "agt_ada",
    "chosen": "agt_ada",
    "by": "agt_ada",
    "outcomeBy": "agt_ada",
    "principalId": "prn_ada",
    "stationId": "station_ada",
    "policy": formulas.DEFAULT.recorded,
    "policyVersion": "pol_1",
    "formula": formulas.DEFAULT.recorded,
    "model": "mdl_0123456789abcdef01234567",
    "decisionId": "pld_0123456789abcdef01234567",
    "service": "superdispatch",
    "explanation": "Held for agt_ada as the winner: the best stage record of 3 eligible.",
    "all": "code-review",
    "any": "code-review",
    "rostered": "agt_ada",
    "evidence": "pld_0123456789abcdef01234567",
    "reasons": "one-candidate",
    "arms": "pull",
    "boards": "brd_review",
    "dropped": "pull",
    "missing": "gpu",
    "features": "stageRecord",
}
ID_PREFIXES = {
    "ExplainedDecision": "pld",
    "Suggestion": "sug",
    "Model": "mdl",
    "Experiment": "exp",
    "AuditEntry": "aud",
}
TIME_EXAMPLE = "2026-12-07T11:59:22.000Z"


def _example(schema: dict, components: dict, code: str, name: str = "", depth: int = 0, owner: str = ""):
    if "$ref" in schema:
        ref = schema["$ref"].rsplit("/", 1)[-1]
        if ref == "Error" and code in ERROR_EXAMPLES:
            error_code, message = ERROR_EXAMPLES[code]
            return {"error": {"code": error_code, "message": message}}
        return _example(components[ref], components, code, name, depth + 1, ref)
    for key in ("oneOf", "anyOf", "allOf"):
        if key in schema:  # the first choice: the value, before its `Null`
            return _example(schema[key][0], components, code, name, depth + 1, owner)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        if depth > 60:  # no answer nests this deep; a cycle would stop here
            return {}
        return {
            key: _example(prop, components, code, key, depth + 1, owner)
            for key, prop in (schema.get("properties") or {}).items()
        }
    if kind == "array":
        item = _example(schema.get("items", {}), components, code, name, depth + 1, owner)
        return [] if item == {} else [item]
    if kind == "string":
        if schema.get("format") == "date-time":
            return TIME_EXAMPLE
        if schema.get("format") == "binary":
            return '{"decisionId":"pld_0123456789abcdef01234567","agentId":"agt_ada"}\n'
        pattern = schema.get("pattern", "")
        for prefix in ("brd", "pld", "sug", "mdl", "exp", "agt", "card"):
            if pattern.startswith(f"^{prefix}_"):
                return NAMED["boardId"] if prefix == "brd" else f"{prefix}_0123456789abcdef01234567"
        if name == "id" and owner in ID_PREFIXES:
            return f"{ID_PREFIXES[owner]}_0123456789abcdef01234567"
        return NAMED.get(name, name or "text")
    if kind == "integer":
        return max(schema.get("minimum", 1), 1) if "maximum" not in schema else schema["minimum"]
    if kind == "number":
        return 0.5 if schema.get("maximum", 1) >= 0.5 else schema["maximum"]
    if kind == "boolean":
        return True
    return None


NULL = {"type": "object", "nullable": True, "enum": [None], "description": "no value: null"}


RETRY_AFTER = {
    "description": "seconds to wait before asking again",
    "schema": {"type": "integer", "minimum": 1},
}


def _schemas(node):
    """Every schema object below `node`, nested ones included."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _schemas(value)
    elif isinstance(node, list):
        for value in node:
            yield from _schemas(value)
