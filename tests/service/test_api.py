import json

import pytest

from records.models import Board, Suggestion
from tests.conftest import T0, at
from tests.support.factories import make_decision
from tests.support.record_shape import DOCUMENTED

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def test_healthz_needs_no_token(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"ok": True, "service": "superdispatch"}


@pytest.mark.parametrize(
    "header", [None, "Bearer wrong", "Basic test-operator-token", "test-operator-token", "Bearer "]
)
@pytest.mark.parametrize(
    "method,path",
    [
        ("get", "/v1/boards"),
        ("put", "/v1/boards/brd_x"),
        ("get", "/v1/decisions"),
        ("get", "/v1/suggestions"),
        ("get", "/v1/dataset"),
        ("get", "/v1/schema"),
        ("get", "/v1/nowhere"),
    ],
)
def test_a_refused_token_is_a_bare_401_and_writes_nothing(client, header, method, path):
    kwargs = {"HTTP_AUTHORIZATION": header} if header else {}
    response = getattr(client, method)(path, **kwargs)
    assert response.status_code == 401
    assert response.content in (b"", b"{}")
    assert not Board.objects.exists()


def test_opt_in_lists_opt_out_keeps_the_row(api):
    put = api.put("/v1/boards/brd_x")
    assert put.status_code == 200
    board = put.json()["board"]
    assert board["boardId"] == "brd_x" and board["enabled"] is True
    assert set(board) == {"boardId", "enabled", "createdAt", "updatedAt"}
    assert api.get("/v1/boards").json()["boards"] == [board]
    gone = api.delete("/v1/boards/brd_x")
    assert gone.status_code == 200 and gone.json()["board"]["enabled"] is False
    assert api.get("/v1/boards/brd_x").json()["board"]["enabled"] is False
    again = api.put("/v1/boards/brd_x").json()["board"]
    assert again["enabled"] is True and again["createdAt"] == board["createdAt"]


def test_opt_in_twice_is_one_board(api):
    api.put("/v1/boards/brd_x")
    api.put("/v1/boards/brd_x")
    assert Board.objects.count() == 1


@pytest.mark.parametrize("path", ["/v1/boards/brd_x/", "/v1/boards/", "/v1/decisions/"])
def test_routes_answer_only_at_their_exact_path(api, path):
    response = api.get(path)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not-found"


def test_a_bad_board_id_is_400_and_writes_nothing(api):
    response = api.put("/v1/boards/not-a-board")
    assert response.status_code == 400
    assert "board id" in response.json()["error"]["message"]
    assert not Board.objects.exists()


def test_opt_in_with_a_body_is_refused(api):
    response = api.put("/v1/boards/brd_x", data=b'{"x":1}', content_type="application/json")
    assert response.status_code == 400 and not Board.objects.exists()


def test_unknown_board_and_decision_are_404(api):
    assert api.get("/v1/boards/brd_nope").status_code == 404
    assert api.delete("/v1/boards/brd_nope").status_code == 404
    assert api.get("/v1/decisions/pld_" + "0" * 24).status_code == 404
    assert api.get("/v1/suggestions/sug_" + "0" * 24).status_code == 404


@pytest.mark.parametrize(
    "query,named",
    [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=abc", "limit"),
        ("before=yesterday", "before"),
        ("card=card_1", "card"),
        ("colour=red", "colour"),
        ("board=nope", "board"),
    ],
)
def test_bad_decision_parameters_are_400_naming_them(api, query, named):
    response = api.get(f"/v1/decisions?{query}")
    assert response.status_code == 400
    assert named in response.json()["error"]["message"]


def test_decisions_are_newest_first_filtered_and_limited(api):
    for i in range(5):
        make_decision(card=f"card_{i}", created_at=at(i))
    make_decision(board="brd_b", card="card_0", created_at=at(10))
    ids = [d["cardId"] for d in api.get("/v1/decisions?board=brd_a").json()["decisions"]]
    assert ids == ["card_4", "card_3", "card_2", "card_1", "card_0"]
    assert len(api.get("/v1/decisions?limit=2").json()["decisions"]) == 2
    before = api.get("/v1/decisions?board=brd_a&before=2026-11-13T10:00:02Z").json()
    assert [d["cardId"] for d in before["decisions"]] == ["card_1", "card_0"]
    one = api.get("/v1/decisions?board=brd_b&card=card_0").json()["decisions"]
    assert len(one) == 1 and one[0]["boardId"] == "brd_b"


def test_a_decision_reads_in_the_documented_shape(api):
    d = make_decision(
        chosen="agt_ada",
        created_at=T0,
        reserved_until=at(60),
        outcome_status="claimed",
        outcome_by="agt_ada",
        outcome_at=at(19),
        candidates=[
            {
                "agent": "agt_ada",
                "total": 2,
                "station": "stn_1",
                "terms": {"stageRecord": 0.81, "successRate": 0.75, "sinceLastDispatchS": 5400},
            },
            {"agent": "agt_cyd", "failing": {"idle": "not-idle"}},
            {"agent": "agt_eli", "off_roster": True, "capable": True},
        ],
    )
    body = api.get(f"/v1/decisions/{d.id}").json()["decision"]
    assert set(body) == DOCUMENTED["decision"] | {"explanation"}
    assert list(body)[-1] == "explanation", "an addition after every documented field"
    assert body["explanation"].startswith(
        "Held for agt_ada as the winner. It was the only candidate that passed every filter."
    )
    assert "One filter short: agt_cyd (not idle)." in body["explanation"]
    listed = api.get("/v1/decisions").json()["decisions"][0]
    assert listed["explanation"] == body["explanation"]
    assert body["id"].startswith("pld_") and len(body["id"]) == 28
    assert body["tier"] == {"name": "winner", "step": 1}
    assert body["reservation"] == {"reservedUntil": "2026-11-13T10:01:00.000Z"}
    assert body["outcome"] == {"status": "claimed", "by": "agt_ada", "at": "2026-11-13T10:00:19.000Z"}
    ada, cyd, eli = body["candidates"]
    assert ada["candidate"] == {
        "agentId": "agt_ada",
        "principalId": "prn_ada",
        "stationId": "stn_1",
        "source": "roster",
    }
    assert ada["score"]["total"] == 2 and "capable" not in ada
    assert {"filter": "idle", "passed": False, "reason": "not-idle"} in cyd["filters"]
    assert cyd["score"] is None
    assert eli["filters"] == [{"filter": "roster", "passed": False, "reason": "not-on-roster"}]
    assert eli["capable"] is True and eli["candidate"]["source"] == "direct"


def _suggestion(**fields):
    base = dict(
        kind="lane-single-point", board_id="brd_a", stage_key="review", first_seen_at=T0, last_seen_at=T0
    )
    base.update(fields)
    return Suggestion.objects.create(**base)


def test_suggestions_filter_by_state_kind_and_board(api):
    open_one = _suggestion()
    _suggestion(kind="add-station", dismissed_at=T0)
    _suggestion(kind="change-model", board_id="brd_b", resolved_at=T0)
    assert [s["id"] for s in api.get("/v1/suggestions").json()["suggestions"]] == [open_one.id]
    assert len(api.get("/v1/suggestions?state=all").json()["suggestions"]) == 3
    dismissed = api.get("/v1/suggestions?state=dismissed").json()["suggestions"]
    assert [s["kind"] for s in dismissed] == ["add-station"]
    assert (
        api.get("/v1/suggestions?state=all&kind=change-model&board=brd_b").json()["suggestions"][0]["kind"]
        == "change-model"
    )


@pytest.mark.parametrize("query", ["state=closed", "kind=hire-someone", "board=x", "page=2"])
def test_bad_suggestion_parameters_are_400(api, query):
    assert api.get(f"/v1/suggestions?{query}").status_code == 400


def test_dismiss_is_idempotent_and_keeps_the_first_time(api):
    s = _suggestion()
    first = api.generic("POST", f"/v1/suggestions/{s.id}/dismiss").json()["suggestion"]
    second = api.generic("POST", f"/v1/suggestions/{s.id}/dismiss").json()["suggestion"]
    assert first["dismissedAt"] is not None and first["dismissedAt"] == second["dismissedAt"]
    assert api.get("/v1/suggestions").json()["suggestions"] == []


def test_supply_and_roster_suggestions_read_their_own_shapes(api):
    roster = _suggestion(
        kind="add-agent-to-board",
        rostered=["agt_a"],
        candidates=[{"agentId": "agt_b", "principalId": "prn_b", "stationId": None}],
        reasons=["one-candidate"],
    )
    supply = _suggestion(kind="raise-capacity", stage_key="build", registry="read")
    r = api.get(f"/v1/suggestions/{roster.id}").json()["suggestion"]
    assert {"capability", "rostered", "candidates", "reasons", "reason"} <= set(r)
    s = api.get(f"/v1/suggestions/{supply.id}").json()["suggestion"]
    assert {"rationale", "target", "estimatedEffect", "howToApply", "registry"} <= set(s)
    assert {"evidence", "evidenceCount", "firstSeenAt", "lastSeenAt", "resolvedAt", "dismissedAt"} <= set(
        s
    ) & set(r)


def test_malformed_json_is_400_not_500(api):
    response = api.post("/v1/models/train", data=b"{nope", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad-json"


def test_an_oversized_body_is_refused(api):
    big = json.dumps({"pad": "x" * 300_000})
    response = api.post("/v1/models/train", data=big, content_type="application/json")
    assert 400 <= response.status_code < 500


@pytest.mark.parametrize("path", ["/v1/decisions/pld_123", "/v1/suggestions/sug_zz", "/v1/models/mdl_1"])
def test_ids_of_the_wrong_shape_are_400(api, path):
    assert api.get(path).status_code == 400


def test_the_openapi_schema_generates_and_docs_page_serves(api):
    schema = api.get("/v1/schema")
    assert schema.status_code == 200 and b"/v1/decisions" in schema.content
    assert api.get("/v1/docs").status_code == 200


def test_later_routes_exist_with_validation(api):
    assert api.get("/v1/dataset?format=xml").status_code == 400
    assert api.get("/v1/dataset").status_code in (200, 501)
    assert api.get("/v1/models").status_code in (200, 501)
