"""The OpenAPI schema states every answer: errors with their body, the bare 401, the patterns
of path ids, and the learning routes' answers. (tests/contract checks the live API against it.)
"""
import pytest
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db

ERROR = {"$ref": "#/components/schemas/Error"}


@pytest.fixture(scope="module")
def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_every_operator_route_documents_its_errors_and_the_bare_401(schema):
    seen = 0
    for path, method, operation in operations(schema):
        answers = operation["responses"]
        if path in ("/healthz", "/v1/relay/events"):
            assert "scope" not in operation.get("description", ""), path
            continue
        seen += 1
        assert "content" not in answers["401"], (method, path)  # bare: no body
        for code in ("400", "403", "406") + (("404",) if "{" in path else ()):
            assert answers[code]["content"]["application/json"]["schema"] == ERROR, (
                method, path, code)
        assert "Needs the scope `" in operation["description"], (method, path)
    assert seen == 19


def test_the_error_body_is_the_one_shape(schema):
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    detail = schema["components"]["schemas"]["ErrorDetail"]
    assert set(detail["properties"]) == {"code", "message", "scope"}  # scope: a 403's alone
    assert detail["required"] == ["code", "message"]


@pytest.mark.parametrize("path,name,pattern", [
    ("/v1/boards/{board_id}", "board_id", "^brd_[A-Za-z0-9_-]{1,100}$"),
    ("/v1/decisions/{decision_id}", "decision_id", "^pld_[0-9a-f]{24}$"),
    ("/v1/suggestions/{suggestion_id}/dismiss", "suggestion_id", "^sug_[0-9a-f]{24}$"),
    ("/v1/models/{model_id}/shadow-report", "model_id", "^mdl_[0-9a-f]{24}$"),
])
def test_path_ids_carry_their_patterns(schema, path, name, pattern):
    for operation in schema["paths"][path].values():
        (parameter,) = [p for p in operation["parameters"] if p["name"] == name]
        assert parameter["schema"] == {"type": "string", "pattern": pattern}


def test_query_parameters_carry_anchored_patterns_and_ranges(schema):
    parameters = {p["name"]: p["schema"] for p in schema["paths"]["/v1/decisions"]["get"]["parameters"]}
    assert parameters["board"]["pattern"] == "^brd_[A-Za-z0-9_-]{1,100}$"
    assert parameters["agent"]["pattern"] == "^agt_[A-Za-z0-9_-]{1,100}$"
    assert (parameters["limit"]["minimum"], parameters["limit"]["maximum"]) == (1, 200)


def test_the_relay_documents_its_signed_refusal_and_the_training_its_refusal(schema):
    relay = schema["paths"]["/v1/relay/events"]["post"]
    assert set(relay["responses"]) == {"200", "202", "400", "401", "406", "413", "503"}
    assert relay["responses"]["401"]["content"]["application/json"]["schema"] == ERROR
    assert {p["name"] for p in relay["parameters"]} == {
        "X-Treaty-Timestamp", "X-Treaty-Signature", "X-Treaty-Delivery"}
    train = schema["paths"]["/v1/models/train"]["post"]
    assert {"201", "422"} <= set(train["responses"]) and "200" not in train["responses"]
    body = schema["components"]["schemas"]["TrainBody"]
    assert body["additionalProperties"] is False
    assert list(train["requestBody"]["content"]) == ["application/json"]


def test_the_learning_answers_have_their_serializers(schema):
    models = schema["components"]["schemas"]
    assert "ModelAnswer" in models and "ShadowReportAnswer" in models
    assert {"id", "version", "weights", "metrics", "createdAt"} <= set(
        models["Model"]["properties"])
    assert models["ShadowReport"]["properties"]["marginPct"]["nullable"] is True
