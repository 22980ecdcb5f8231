"""Query strings and bodies are read by serializers, to the letter of the rules they state:
the first bad value in the order given is a 400 whose message names it."""

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.support.record_shape import DOCUMENTED

pytestmark = [pytest.mark.django_db]

LIMIT = "limit must be an integer from 1 to 200"
BOARD = "board must be a board id (brd_…)"
SEED = "seed must be an integer from 0 to 9007199254740991"
SINCE = "since must be a time (RFC 3339, or a date like 2026-11-01)"
NOT_AN_OBJECT = "the body is a JSON object: {since?, seed?}"

# Each message, and the queries answered with it: none reads past its first bad value.
BAD_QUERIES = {
    LIMIT: ["limit=5.0", "limit=%205", "limit=1_0", "limit=", "limit=0&colour=red", "card=card_1&limit=0"],
    BOARD: ["board=%20brd_a", "board=brd_a%20"],
    "unknown parameter 'colour'; this route takes: agent, before, board, card, limit": ["colour=red&limit=0"],
    "limit given more than once": ["limit=1&limit=2"],
    "card needs board": ["card=card_1"],
    "before must be a time (RFC 3339, or a date like 2026-11-01)": ["before="],
}
OTHER_ROUTES = {
    "unknown parameter 'x'; this route takes: ": "/v1/boards?x=1",
    "state must be one of open, dismissed, resolved, all": "/v1/suggestions?state=",
    "format given more than once": "/v1/dataset?format=json&format=jsonl",
}
BAD = [(f"/v1/decisions?{q}", message) for message, queries in BAD_QUERIES.items() for q in queries] + [
    (path, message) for message, path in OTHER_ROUTES.items()
]


@pytest.mark.parametrize("path,message", BAD)
def test_a_bad_query_is_answered_with_its_own_code_and_message(api, path, message):
    response = api.get(path)
    code = "unknown-parameter" if message.startswith("unknown") else "bad-parameter"
    assert response.status_code == 400
    assert response.json() == {"error": {"code": code, "message": message}}


@pytest.mark.parametrize(
    "path",
    [
        "/v1/decisions?before=%202026-11-01",
        "/v1/decisions?limit=00005",
        "/v1/decisions?board=brd_a&card=card_1&limit=200",
    ],
)
def test_a_good_query_is_read(api, path):
    assert api.get(path).status_code == 200


BAD_BODIES = {
    NOT_AN_OBJECT: [b"[]", b"null"],
    "unknown field 'alpha'; the body takes since, seed": [b'{"colour":1,"alpha":2}'],
    SEED: [b'{"seed":2.0}', b'{"seed":true}', b'{"seed":"1"}', b'{"seed":9007199254740992}'],
    SINCE: [b'{"seed":"bad","since":"bad"}'],
}
CODES = {NOT_AN_OBJECT: "bad-body"}


@pytest.mark.parametrize(
    "body,message", [(body, message) for message, bodies in BAD_BODIES.items() for body in bodies]
)
def test_a_bad_training_body_is_answered_with_its_own_code_and_message(api, body, message):
    response = api.post("/v1/models/train", data=body, content_type="application/json")
    code = "unknown-field" if message.startswith("unknown") else CODES.get(message, "bad-field")
    assert response.status_code == 400
    assert response.json() == {"error": {"code": code, "message": message}}


@pytest.mark.parametrize("body", [b'{"seed":null,"since":null}', b'{"since":" 2026-11-01 "}', b""])
def test_a_good_training_body_reaches_training(api, body):
    response = api.post("/v1/models/train", data=body, content_type="application/json")
    assert response.status_code == 422 and response.json()["error"]["code"] == "too-few-rows"


def test_the_schema_takes_parameters_and_answers_from_the_serializers():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    decisions = schema["paths"]["/v1/decisions"]["get"]
    assert {p["name"] for p in decisions["parameters"]} == {"board", "card", "agent", "before", "limit"}
    schemas = schema["components"]["schemas"]
    assert set(schemas["ExplainedDecision"]["properties"]) == DOCUMENTED["decision"] | {
        "reservationUnknown",
        "learned",
        "waiting",
        "outlook",
        "run",
        "experiment",
        "explanation",
        "agent",
    }
    assert set(schemas["Candidate"]["properties"]) == DOCUMENTED["candidate"]
    train = schema["paths"]["/v1/models/train"]["post"]["requestBody"]
    assert train["content"]["application/json"]["schema"]["$ref"].endswith("/TrainBody")
