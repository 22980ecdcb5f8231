"""Every route answers in exactly the shapes of contracts.md, and each failure toggle as the real product
would."""

import pytest

from sandbox.scenario import AgentSpec

CARD_KEYS = {
    "id",
    "title",
    "currentStageKey",
    "state",
    "delegateAgentId",
    "priority",
    "readyAt",
    "claimedAt",
    "archivedAt",
    "reservation",
    "createdAt",
    "updatedAt",
    "attemptCount",
}


def test_board_read_has_the_contract_shape(world):
    card = world.card(priority=1)
    world.pipeline.reserve("brd_r", card.id, "agt_ada", 60)
    status, board = world.call("GET", "superpipeline", "/v1/boards/brd_r")
    assert status == 200
    assert set(board) == {"boardId", "tenantId", "name", "stages", "cards"}
    assert (board["boardId"], board["tenantId"]) == ("brd_r", "tnt_t")
    review, qa = board["stages"]
    assert review == {
        "key": "review",
        "name": "Review",
        "order": 1,
        "ownerKind": "capability",
        "owner": "code-review",
        "requires": None,
        "placement": None,
    }
    assert qa["placement"] == {
        "isolation": "container",
        "models": ["m-large"],
        "tools": [],
        "credentials": [],
    }
    [shown] = board["cards"]
    assert set(shown) == CARD_KEYS
    assert shown["reservation"] == {"agentId": "agt_ada", "reservedUntil": "2026-11-13T10:01:00.000Z"}
    assert (shown["state"], shown["priority"], shown["attemptCount"]) == ("submitted", 1, 0)
    assert shown["readyAt"] == "2026-11-13T10:00:00.000Z" and shown["claimedAt"] is None


def test_board_read_keeps_a_lapsed_hold_until_a_claim_clears_it(world):
    card = world.card()
    world.pipeline.reserve("brd_r", card.id, "agt_ada", 5)
    world.clock.advance(6)
    assert world.call("GET", "superpipeline", "/v1/boards/brd_r")[1]["cards"][0]["reservation"] is not None
    world.pipeline.claim("agt_bob", card.id)
    shown = world.call("GET", "superpipeline", "/v1/boards/brd_r")[1]["cards"][0]
    assert (
        shown["reservation"] is None and shown["state"] == "working" and shown["delegateAgentId"] == "agt_bob"
    )


def test_finished_cards_stay_in_the_read_for_an_hour_then_leave_the_board(world):
    card = world.card(stage="qa")
    world.pipeline.claim("agt_ada", card.id)
    world.pipeline.finish("agt_ada", card.id, succeeded=True)
    archived = world.card()
    world.pipeline.archive_card(archived.id)
    cards = world.call("GET", "superpipeline", "/v1/boards/brd_r")[1]["cards"]
    assert [c["state"] for c in cards] == ["completed", "submitted"]
    assert cards[1]["archivedAt"] == "2026-11-13T10:00:00.000Z"
    world.clock.advance(3601)
    assert world.call("GET", "superpipeline", "/v1/boards/brd_r")[1]["cards"] == []


def test_unknown_board_is_404(world):
    status, body = world.call("GET", "superpipeline", "/v1/boards/brd_nope")
    assert status == 404 and body["error"]["code"] == "board_not_found"


def test_eligibility_judges_every_agent_of_the_workspace_with_reasons(world):
    card = world.card()
    world.pipeline.claim("agt_bob", world.card().id)
    status, answer = world.call("GET", "superpipeline", f"/v1/boards/brd_r/cards/{card.id}/eligibility")
    assert status == 200
    assert answer["cardId"] == card.id and answer["stageKey"] == "review"
    assert answer["requires"] == {"all": ["code-review"], "any": []}  # the owner, as requires is unset
    verdicts = {a["agentId"]: a for a in answer["agents"]}
    assert verdicts["agt_ada"] == {
        "agentId": "agt_ada",
        "principalId": "prn_ada",
        "eligible": True,
        "reasons": [],
    }
    assert verdicts["agt_bob"]["reasons"] == ["concurrency_reached"]
    assert verdicts["agt_cyd"]["eligible"] is True
    assert verdicts["agt_eli"] == {
        "agentId": "agt_eli",
        "principalId": None,
        "eligible": False,
        "reasons": ["capability_mismatch", "grant_denied"],
    }


def test_eligibility_answers_what_the_workspace_says_now_card_after_card(world):
    # The route sends a ready card's plain verdicts as JSON encoded once; what it sends must
    # still follow each change: an agent at its concurrency, a hold, an agent that joins.
    def answered(card):
        status, answer = world.call("GET", "superpipeline", f"/v1/boards/brd_r/cards/{card.id}/eligibility")
        assert status == 200
        assert answer == world.pipeline.eligibility_json("brd_r", card.id)
        return {a["agentId"]: a["reasons"] for a in answer["agents"]}

    first, second, third = world.card(), world.card(), world.card()
    assert answered(first)["agt_bob"] == [] and answered(second)["agt_bob"] == []
    world.pipeline.claim("agt_bob", third.id)
    assert answered(first)["agt_bob"] == ["concurrency_reached"]
    world.pipeline.reserve("brd_r", second.id, "agt_ada", 60)
    assert answered(second)["agt_cyd"] == ["card_reserved"]
    world.pipeline.finish("agt_bob", third.id, succeeded=True)
    assert answered(first)["agt_bob"] == []
    world.pipeline.add_agent(AgentSpec("agt_new", "prn_new", ("code-review",), None, ()))
    assert answered(first)["agt_new"] == [] and answered(world.card())["agt_new"] == []


def test_eligibility_of_a_card_held_for_another_names_the_hold(world):
    card = world.card()
    world.pipeline.reserve("brd_r", card.id, "agt_ada", 60)
    _, answer = world.call("GET", "superpipeline", f"/v1/boards/brd_r/cards/{card.id}/eligibility")
    verdicts = {a["agentId"]: a["reasons"] for a in answer["agents"]}
    assert verdicts["agt_ada"] == [] and verdicts["agt_bob"] == ["card_reserved"]


def test_eligibility_of_an_unknown_card_is_404(world):
    status, body = world.call("GET", "superpipeline", "/v1/boards/brd_r/cards/card_x/eligibility")
    assert status == 404 and body["error"]["code"] == "card_not_found"


def test_reservation_answers_the_hold(world):
    card = world.card()
    status, body = world.call(
        "PUT",
        "superpipeline",
        f"/v1/boards/brd_r/cards/{card.id}/reservation",
        {"agentId": "agt_bob", "seconds": 60},
    )
    assert status == 200
    assert body == {"reservation": {"agentId": "agt_bob", "reservedUntil": "2026-11-13T10:01:00.000Z"}}
    assert not world.pipeline.is_ready(card)


@pytest.mark.parametrize("seconds", [0, 301, "60", 1.5, None, True])
def test_reservation_seconds_outside_1_to_300_are_refused_400(world, seconds):
    card = world.card()
    status, body = world.call(
        "PUT",
        "superpipeline",
        f"/v1/boards/brd_r/cards/{card.id}/reservation",
        {"agentId": "agt_bob", "seconds": seconds},
    )
    assert status == 400 and body["error"]["code"] == "invalid_request"


def test_reservation_refusals_carry_a_code(world):
    card = world.card()
    path = f"/v1/boards/brd_r/cards/{card.id}/reservation"
    assert (
        world.call("PUT", "superpipeline", path, {"agentId": "agt_zed", "seconds": 5})[1]["error"]["code"]
        == "agent_not_found"
    )
    assert (
        world.call("PUT", "superpipeline", path, {"agentId": "agt_eli", "seconds": 5})[1]["error"]["code"]
        == "agent_not_eligible"
    )
    world.call("PUT", "superpipeline", path, {"agentId": "agt_ada", "seconds": 5})
    status, body = world.call("PUT", "superpipeline", path, {"agentId": "agt_bob", "seconds": 5})
    assert (status, body["error"]["code"]) == (409, "card_reserved")
    world.pipeline.claim("agt_ada", card.id)
    assert (
        world.call("PUT", "superpipeline", path, {"agentId": "agt_bob", "seconds": 5})[1]["error"]["code"]
        == "card_not_ready"
    )
    status, body = world.call(
        "PUT",
        "superpipeline",
        "/v1/boards/brd_r/cards/card_x/reservation",
        {"agentId": "agt_bob", "seconds": 5},
    )
    assert (status, body["error"]["code"]) == (404, "card_not_found")


def test_superpipeline_without_the_reservation_verb_answers_404(world):
    world.suite.toggles.reservation_verb = False
    card = world.card()
    status, body = world.call(
        "PUT",
        "superpipeline",
        f"/v1/boards/brd_r/cards/{card.id}/reservation",
        {"agentId": "agt_bob", "seconds": 60},
    )
    assert status == 404 and body == {"error": "not found"}
    assert card.reservation is None


def test_scheduling_sets_the_placement_window_from_0_to_30(world):
    status, body = world.call(
        "PUT", "superpipeline", "/v1/boards/brd_r/scheduling", {"placementWindowSeconds": 10}
    )
    assert (status, body) == (200, {"placementWindowSeconds": 10})
    assert world.pipeline.boards["brd_r"].placement_window_seconds == 10
    assert world.call("PUT", "superpipeline", "/v1/boards/brd_r/scheduling", {"placementWindowSeconds": 0})[
        1
    ] == {"placementWindowSeconds": 0}
    assert (
        world.call("PUT", "superpipeline", "/v1/boards/brd_r/scheduling", {"placementWindowSeconds": 31})[0]
        == 400
    )


def test_agents_load_reports_every_agent(world):
    world.pipeline.claim("agt_cyd", world.card().id)
    world.clock.advance(5)
    status, body = world.call("GET", "superpipeline", "/v1/agents/load")
    assert status == 200
    rows = {r["agentId"]: r for r in body["agents"]}
    assert set(rows) == {"agt_ada", "agt_bob", "agt_cyd", "agt_eli"}
    assert rows["agt_cyd"] == {
        "agentId": "agt_cyd",
        "principalId": "prn_cyd",
        "inFlight": 1,
        "capacity": 2,
        "lastHeartbeatAt": "2026-11-13T10:00:05.000Z",
    }
    assert rows["agt_ada"] == {
        "agentId": "agt_ada",
        "principalId": "prn_ada",
        "inFlight": 0,
        "capacity": None,
        "lastHeartbeatAt": None,
    }


def test_superpipeline_without_the_load_verb_answers_404(world):
    world.suite.toggles.agents_load_verb = False
    assert world.call("GET", "superpipeline", "/v1/agents/load")[0] == 404


@pytest.mark.parametrize("failure, status", [("500", 500), ("404", 404), ("garbage", 200), ("shape", 200)])
def test_an_unreadable_board_fails_as_asked(world, failure, status):
    world.suite.toggles.board_failures["brd_r"] = failure
    answer_status, body = world.call("GET", "superpipeline", "/v1/boards/brd_r")
    assert answer_status == status
    assert not (isinstance(body, dict) and "cards" in body)
    assert world.call("GET", "superpipeline", "/v1/boards/brd_o")[0] == 200


def test_roster_has_the_contract_shape_and_follows_the_bridge(world):
    card = world.card()
    world.clock.advance(7)
    world.pipeline.claim("agt_ada", card.id)
    status, roster = world.call("GET", "agentpod", "/api/bridge/boards/brd_r/roster")
    assert status == 200 and roster["boardId"] == "brd_r"
    assert roster["agents"] == [
        {
            "key": "ada-bridge",
            "agentId": "agt_ada",
            "principalId": "prn_ada",
            "stationId": "station_ada",
            "enabled": True,
            "ready": True,
            "busy": True,
            "lastTookWorkAt": "2026-11-13T10:00:07.000Z",
        },
        {
            "key": "bob-bridge",
            "agentId": "agt_bob",
            "principalId": "prn_bob",
            "stationId": "station_bob",
            "enabled": True,
            "ready": True,
            "busy": False,
            "lastTookWorkAt": None,
        },
    ]  # agt_cyd pulls with its own token: no bridge row


def test_roster_shows_a_disabled_row(world):
    _, roster = world.call("GET", "agentpod", "/api/bridge/boards/brd_o/roster")
    assert [(r["key"], r["enabled"], r["principalId"], r["stationId"]) for r in roster["agents"]] == [
        ("eli-box", False, None, None)
    ]


def test_roster_needs_an_agentpod_token_and_a_listed_reader(world):
    assert (
        world.call("GET", "agentpod", "/api/bridge/boards/brd_r/roster", token=world.token("superpipeline"))[
            0
        ]
        == 401
    )
    world.suite.agentpod.roster_readers.clear()
    status, body = world.call("GET", "agentpod", "/api/bridge/boards/brd_r/roster")
    assert status == 403 and body["error"]["code"] == "forbidden"


def test_roster_audience_can_differ_from_its_url(world):
    world.suite.urls.agentpod_audience = "https://hub.example"
    status, _ = world.call("GET", "agentpod", "/api/bridge/boards/brd_r/roster")
    assert status == 200
    assert world.suite.dispatch_config().agentpod_audience == "https://hub.example"


def test_catalog_lists_stations_with_proofs_and_occupant(world):
    status, body = world.call("GET", "agentpod", "/api/catalog/stations")
    assert status == 200
    assert body == {
        "stations": [
            {
                "stationId": "station_ada",
                "runtime": "rt_1",
                "harness": "codex",
                "occupant": "agt_ada",
                "isolation": {"value": "container", "proof": "probed"},
                "models": [{"id": "m-large", "proof": "declared"}],
                "tools": [{"id": "git", "proof": "installed"}],
                "credentials": [{"name": "GITHUB_TOKEN", "proof": "declared"}],
            }
        ]
    }


def test_agentpod_without_the_registry_answers_404(world):
    world.suite.toggles.station_registry = False
    status, body = world.call("GET", "agentpod", "/api/catalog/stations")
    assert status == 404 and body == {"error": "not found"}


def test_catalog_needs_a_listed_reader(world):
    world.suite.agentpod.catalog_readers.clear()
    assert world.call("GET", "agentpod", "/api/catalog/stations")[0] == 403


def _record_runs(world, count, stage_key="review", status="succeeded"):
    for i in range(count):
        world.clock.advance(60)
        world.suite.witness.record(
            f"prn_{i % 3}",
            status,
            "brd_r",
            stage_key,
            world.clock(),
            {"decision": "approve"} if i % 2 else None,
            f"agent {i}",
        )


def test_runs_have_the_contract_shape_newest_first(world):
    _record_runs(world, 2)
    status, body = world.call("GET", "superwitness", "/v1/runs")
    assert status == 200 and body["next_cursor"] is None
    assert body["runs"] == [
        {
            "executor": {"id": "prn_1", "name": "agent 1"},
            "status": "succeeded",
            "stage_key": "review",
            "ended_at": "2026-11-13T10:02:00.000Z",
            "latest_verdict": {"value": {"decision": "approve"}},
        },
        {
            "executor": {"id": "prn_0", "name": "agent 0"},
            "status": "succeeded",
            "stage_key": "review",
            "ended_at": "2026-11-13T10:01:00.000Z",
            "latest_verdict": None,
        },
    ]


def test_runs_follow_next_cursor_through_every_page_once(world):
    _record_runs(world, 7)
    seen, cursor, pages = [], None, 0
    while True:
        query = {"limit": ["3"], **({"cursor": [cursor]} if cursor else {})}
        status, body = world.call("GET", "superwitness", "/v1/runs", query=query)
        assert status == 200
        seen += [r["ended_at"] for r in body["runs"]]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert pages == 3 and len(seen) == 7 and seen == sorted(seen, reverse=True)


def test_runs_filter_by_scope_stage_status_and_since(world):
    _record_runs(world, 2)
    _record_runs(world, 2, stage_key="qa")
    _record_runs(world, 1, status="failed")
    _record_runs(world, 1, status="cancelled")
    world.suite.witness.record("prn_x", "succeeded", "brd_o", "review", world.clock(), None)
    query = {
        "source": ["superpipeline"],
        "scope": ["brd_r"],
        "stage_key": ["review"],
        "status": ["succeeded", "failed"],
        "since": ["2026-11-13T10:02:00.000Z"],
        "limit": ["200"],
    }
    _, body = world.call("GET", "superwitness", "/v1/runs", query=query)
    assert [(r["status"], r["ended_at"]) for r in body["runs"]] == [
        ("failed", "2026-11-13T10:05:00.000Z"),
        ("succeeded", "2026-11-13T10:02:00.000Z"),
    ]


@pytest.mark.parametrize(
    "query", [{"limit": ["0"]}, {"limit": ["x"]}, {"since": ["yesterday"]}, {"cursor": ["bad!"]}]
)
def test_runs_refuse_a_bad_query_400(world, query):
    status, body = world.call("GET", "superwitness", "/v1/runs", query=query)
    assert status == 400 and "code" in body["error"]


def test_runs_need_a_superwitness_token_but_no_scope(world):
    limited = world.suite.accounts.add_credential([])
    assert world.call("GET", "superwitness", "/v1/runs", token=world.token("superwitness", limited))[0] == 200
    assert world.call("GET", "superwitness", "/v1/runs", token=world.token("agentpod"))[0] == 401


def test_superwitness_down_answers_503(world):
    world.suite.toggles.superwitness_up = False
    status, body = world.call("GET", "superwitness", "/v1/runs", token="anything")
    assert status == 503 and body["error"]["code"] == "unavailable"


def test_unknown_route_is_404_and_wrong_method_is_405(world):
    assert world.call("GET", "superpipeline", "/v1/nothing") == (404, {"error": "not found"})
    assert world.call("DELETE", "superpipeline", "/v1/boards/brd_r")[0] == 405
    assert world.call("GET", "agentpod", "/v1/boards/brd_r")[0] == 404  # a SuperPipeline route, at AgentPod


def test_a_body_that_is_not_json_is_refused_400(world):
    card = world.card()
    headers = {"Authorization": f"Bearer {world.token('superpipeline')}"}
    status, _, _ = world.suite.handle(
        "PUT",
        world.url("superpipeline", f"/v1/boards/brd_r/cards/{card.id}/reservation"),
        None,
        headers,
        b"{not json",
    )
    assert status == 400
