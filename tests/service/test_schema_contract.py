"""The OpenAPI schema states every answer: errors with their body, the bare 401, the patterns
of path ids, and the learning routes' answers. (tests/contract checks the live API against it.)
"""

import re

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
            assert answers[code]["content"]["application/json"]["schema"] == ERROR, (method, path, code)
        assert "Needs the scope `" in operation["description"], (method, path)
    assert seen == 19


def test_the_error_body_is_the_one_shape(schema):
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    detail = schema["components"]["schemas"]["ErrorDetail"]
    assert set(detail["properties"]) == {"code", "message", "scope"}  # scope: a 403's alone
    assert detail["required"] == ["code", "message"]


@pytest.mark.parametrize(
    "path,name,pattern",
    [
        ("/v1/boards/{board_id}", "board_id", "^brd_[A-Za-z0-9_-]{1,100}$"),
        ("/v1/decisions/{decision_id}", "decision_id", "^pld_[0-9a-f]{24}$"),
        ("/v1/suggestions/{suggestion_id}/dismiss", "suggestion_id", "^sug_[0-9a-f]{24}$"),
        ("/v1/models/{model_id}/shadow-report", "model_id", "^mdl_[0-9a-f]{24}$"),
    ],
)
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
        "X-Treaty-Timestamp",
        "X-Treaty-Signature",
        "X-Treaty-Delivery",
    }
    train = schema["paths"]["/v1/models/train"]["post"]
    assert {"201", "422"} <= set(train["responses"]) and "200" not in train["responses"]
    body = schema["components"]["schemas"]["TrainBody"]
    assert body["additionalProperties"] is False
    assert list(train["requestBody"]["content"]) == ["application/json"]


def test_the_learning_answers_have_their_serializers(schema):
    models = schema["components"]["schemas"]
    assert "ModelAnswer" in models and "ShadowReportAnswer" in models
    assert {"id", "version", "weights", "metrics", "createdAt"} <= set(models["Model"]["properties"])
    assert models["ShadowReport"]["properties"]["marginPct"]["nullable"] is True


# --- What generated clients and schema linters read (issue 48) ---------------------------


def test_format_json_answers_the_schema_as_json_and_accept_still_chooses(api):
    as_json = api.get("/v1/schema?format=json")
    assert as_json.status_code == 200 and as_json["Content-Type"].endswith("+json")
    assert as_json.json()["openapi"].startswith("3.")
    assert api.get("/v1/schema?format=yaml")["Content-Type"].startswith("application/vnd.oai.openapi")
    assert api.get("/v1/schema", HTTP_ACCEPT="application/json")["Content-Type"] == "application/json"
    assert api.get("/v1/schema").content.startswith(b"openapi: ")  # YAML, as before


def test_an_unknown_schema_format_is_a_400_naming_it(api):
    response = api.get("/v1/schema?format=xml")
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "bad-format", "message": "format is json or yaml"}


def test_every_operation_has_a_readable_name_and_a_declared_resource_tag(schema):
    from superdispatch.schema import OPERATION_IDS

    declared = {tag["name"] for tag in schema["tags"]}
    named = set()
    for path, method, operation in operations(schema):
        assert operation["operationId"] == OPERATION_IDS.get((method.upper(), path)), (method, path)
        assert re.fullmatch(r"[a-z][A-Za-z]+", operation["operationId"]), operation["operationId"]
        named.add(operation["operationId"])
        (tag,) = operation["tags"]
        assert tag in declared, (method, path, tag)
    assert len(named) == sum(1 for _ in operations(schema))  # each name once
    assert schema["paths"]["/v1/audit"]["get"]["operationId"] == "listAuditEntries"
    assert (
        schema["paths"]["/v1/suggestions/{suggestion_id}/dismiss"]["post"]["operationId"]
        == "dismissSuggestion"
    )


def test_no_answer_property_is_left_untyped(schema):
    untyped = []
    for name, component in schema["components"]["schemas"].items():
        for key, prop in (component.get("properties") or {}).items():
            if not {"type", "$ref", "allOf", "oneOf", "anyOf"} & set(prop):
                untyped.append(f"{name}.{key}")
            elif prop.get("additionalProperties") == {}:
                untyped.append(f"{name}.{key}")
    assert untyped == [], untyped


def test_words_the_docs_list_are_enums(schema):
    components = schema["components"]["schemas"]
    assert components["OutcomeStatus"]["enum"] == [
        "claimed",
        "claimed-by-other",
        "expired",
        "superseded",
        "not-reserved",
    ]
    assert components["TierName"]["enum"] == ["winner", "runner-up", "any-match"]
    assert "add-station" in components["SuggestionKind"]["enum"]
    assert components["Outcome"]["properties"]["status"] == {
        "$ref": "#/components/schemas/OutcomeStatus"
    } or components["Outcome"]["properties"]["status"]["allOf"] == [
        {"$ref": "#/components/schemas/OutcomeStatus"}
    ]


def test_the_agent_key_of_a_decision_read_by_agent_is_declared(schema):
    agent = schema["components"]["schemas"]["ExplainedDecision"]["properties"]["agent"]
    verdict = schema["components"]["schemas"]["AgentVerdict"]
    assert "?agent=" in agent["description"]
    assert set(verdict["properties"]) == {"agentId", "verdict", "reasons", "record"}
    assert "agent" not in schema["components"]["schemas"]["ExplainedDecision"]["required"]


def test_descriptions_speak_to_the_user_and_answered_times_are_not_described_as_input(schema):
    from common.times import parse_time

    for name, component in schema["components"]["schemas"].items():
        text = component.get("description", "")
        assert "source=" not in text and "omit_when_null" not in text, name
        for key, prop in (component.get("properties") or {}).items():
            if prop.get("format") == "date-time" and not name.endswith("Body"):  # answers
                assert prop.get("description") != parse_time.rule, (name, key)
    parameters = {p["name"]: p for p in schema["paths"]["/v1/decisions"]["get"]["parameters"]}
    assert parameters["before"]["description"] == parse_time.rule  # an input says what it reads


def test_omitted_keys_are_optional_and_a_nullable_reference_is_one_of_it_or_null(schema):
    decision = schema["components"]["schemas"]["ExplainedDecision"]["properties"]
    for key in ("learned", "waiting", "outlook", "run"):
        assert "nullable" not in decision[key], key
    null = {"$ref": "#/components/schemas/Null"}
    for key in ("tier", "outcome", "reservation", "requires", "reason"):
        assert decision[key]["oneOf"][-1] == null and "nullable" not in decision[key], key
    assert schema["components"]["schemas"]["Null"] == {
        "type": "object",
        "nullable": True,
        "enum": [None],
        "description": "no value: null",
    }


def test_open_routes_say_they_need_no_credential_and_the_schema_names_its_server(schema):
    assert schema["paths"]["/healthz"]["get"]["security"] == []
    assert schema["paths"]["/v1/relay/events"]["post"]["security"] == []
    assert schema["paths"]["/v1/boards"]["get"]["security"] != []
    assert schema["servers"] and schema["servers"][0]["url"].startswith("http")


def test_health_declares_its_503_with_retry_after(schema):
    answer = schema["paths"]["/healthz"]["get"]["responses"]["503"]
    assert answer["content"]["application/json"]["schema"] == ERROR
    assert answer["headers"]["Retry-After"]["schema"]["type"] == "integer"


def test_the_dataset_declares_each_format(schema):
    answers = schema["paths"]["/v1/dataset"]["get"]["responses"]["200"]["content"]
    assert list(answers) == ["application/x-ndjson", "application/json"]
    assert answers["application/x-ndjson"]["schema"] == {"type": "string", "format": "binary"}
    assert answers["application/json"]["schema"] == {"$ref": "#/components/schemas/Dataset"}
    row = schema["components"]["schemas"]["DatasetRow"]["properties"]
    assert {"decisionId", "agentId", "label", "target", "features", "filters", "pool"} <= set(row)


def test_every_answer_has_an_example_and_an_error_example_says_its_code(schema):
    for path, method, operation in operations(schema):
        for code, answer in operation["responses"].items():
            for media_type, media in (answer.get("content") or {}).items():
                assert "example" in media, (method, path, code, media_type)
    boards = schema["paths"]["/v1/boards"]["get"]["responses"]
    assert boards["200"]["content"]["application/json"]["example"]["boards"][0]["boardId"] == "brd_review"
    assert boards["403"]["content"]["application/json"]["example"]["error"]["code"] == "forbidden"
    one = schema["paths"]["/v1/decisions/{decision_id}"]["get"]["responses"]["200"]
    assert one["content"]["application/json"]["example"]["decision"]["id"].startswith("pld_")
