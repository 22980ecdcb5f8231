"""Accounts: tokens bound to audience, scopes and expiry; products refuse the wrong ones."""

import json

from sandbox import Suite, parse_scenario
from tests.support.sandbox_world import World, small_scenario


def test_service_token_is_issued_for_a_product_audience_for_300_seconds(world):
    status, _, raw = world.suite.handle(
        "POST",
        world.url("accounts", "/api/token/service"),
        headers={"Authorization": f"Bearer {world.suite.credential}"},
        body=json.dumps({"audience": world.suite.urls.superpipeline}).encode(),
    )
    answer = json.loads(raw)
    assert status == 200
    assert answer["token_type"] == "Bearer" and answer["expires_in"] == 300
    assert answer["access_token"].startswith("tok_")


def test_credential_has_the_service_credential_form(world):
    credential_id, _, secret = world.suite.credential.partition(":")
    assert credential_id.startswith("svc_") and len(credential_id) == 24
    assert int(credential_id[4:], 16) >= 0 and secret


def test_wrong_secret_is_refused_401_without_echoing_it(world):
    credential_id = world.suite.credential.partition(":")[0]
    status, _, raw = world.suite.handle(
        "POST",
        world.url("accounts", "/api/token/service"),
        headers={"Authorization": f"Bearer {credential_id}:not-the-secret"},
        body=json.dumps({"audience": world.suite.urls.superpipeline}).encode(),
    )
    assert status == 401
    assert json.loads(raw)["error"]["code"] == "invalid_credential"
    assert b"not-the-secret" not in raw


def test_unknown_audience_is_refused_404(world):
    status, _, raw = world.suite.handle(
        "POST",
        world.url("accounts", "/api/token/service"),
        headers={"Authorization": f"Bearer {world.suite.credential}"},
        body=json.dumps({"audience": "http://elsewhere.example"}).encode(),
    )
    assert status == 404 and json.loads(raw)["error"]["code"] == "unknown_audience"


def test_missing_audience_is_refused_400(world):
    status, _, _ = world.suite.handle(
        "POST",
        world.url("accounts", "/api/token/service"),
        headers={"Authorization": f"Bearer {world.suite.credential}"},
        body=b"{}",
    )
    assert status == 400


def test_token_for_another_audience_is_refused_401(world):
    agentpod_token = world.token("agentpod")
    status, body = world.call("GET", "superpipeline", "/v1/boards/brd_r", token=agentpod_token)
    assert status == 401
    assert body["error"]["code"] == "invalid_audience"


def test_missing_token_is_refused_401(world):
    status, _, raw = world.suite.handle("GET", world.url("superpipeline", "/v1/boards/brd_r"))
    assert status == 401 and set(json.loads(raw)["error"]) == {"code", "message"}


def test_token_lapses_after_300_seconds(world):
    token = world.token("superpipeline")
    world.clock.advance(299)
    assert world.call("GET", "superpipeline", "/v1/boards/brd_r", token=token)[0] == 200
    world.clock.advance(1)
    status, body = world.call("GET", "superpipeline", "/v1/boards/brd_r", token=token)
    assert status == 401 and body["error"]["code"] == "invalid_token"


def test_missing_scope_is_refused_403_on_each_superpipeline_route(world):
    limited = world.suite.accounts.add_credential(["cards:read"])
    token = world.token("superpipeline", limited)
    card = world.card()
    assert world.call("GET", "superpipeline", "/v1/boards/brd_r", token=token)[0] == 200
    for method, path, body in [
        ("GET", f"/v1/boards/brd_r/cards/{card.id}/eligibility", None),
        ("PUT", f"/v1/boards/brd_r/cards/{card.id}/reservation", {"agentId": "agt_ada", "seconds": 60}),
        ("PUT", "/v1/boards/brd_r/scheduling", {"placementWindowSeconds": 10}),
        ("GET", "/v1/agents/load", None),
    ]:
        status, answer = world.call(method, "superpipeline", path, body, token=token)
        assert (status, answer["error"]["code"]) == (403, "insufficient_scope"), path


def test_scenario_can_mint_a_credential_with_fewer_scopes():
    world = World(small_scenario())
    data = {**_raw_small(), "credentialScopes": ["cards:read"]}
    limited = World(parse_scenario(data))
    assert world.call("GET", "superpipeline", "/v1/agents/load")[0] == 200
    assert limited.call("GET", "superpipeline", "/v1/agents/load")[0] == 403


def _raw_small() -> dict:
    return {"boards": [{"id": "brd_r", "stages": [{"key": "review"}]}], "agents": []}


def test_policy_without_a_policy_allows_with_no_policy(world):
    status, body = world.call("POST", "accounts", "/api/policy/decide", _question("agt_ada"))
    assert status == 200
    assert body == {"allow": True, "reasons": ["no-policy"], "policyVersion": None}


def _question(agent_id: str, board_id: str = "brd_r") -> dict:
    return {
        "principalId": "prn_x",
        "agentId": agent_id,
        "boardId": board_id,
        "stageKey": "review",
        "labels": [],
        "capabilities": {"all": ["code-review"], "any": []},
    }


def _policy_world() -> World:
    data = {
        **_raw_small(),
        "agents": [{"id": "agt_a"}, {"id": "agt_b"}, {"id": "agt_c"}],
        "policy": {
            "version": "pol_1",
            "rules": [{"agentId": "agt_a", "effect": "deny", "boardId": "brd_r", "reason": "no-review"}],
            "limits": [{"agentId": "agt_b", "maxRuns": 3, "windowHours": 24}],
        },
    }
    return World(parse_scenario(data))


def test_policy_rule_denies_with_its_version_and_reason():
    status, body = _policy_world().call("POST", "accounts", "/api/policy/decide", _question("agt_a"))
    assert status == 200
    assert body == {"allow": False, "reasons": ["deny:no-review"], "policyVersion": "pol_1"}


def test_policy_limit_is_a_limit_rejection_carrying_the_limit():
    _, body = _policy_world().call("POST", "accounts", "/api/policy/decide", _question("agt_b"))
    assert body["allow"] is False and body["reasons"][0].startswith("limit:")
    assert body["limit"] == {"maxRuns": 3, "windowHours": 24}
    assert body["policyVersion"] == "pol_1"


def test_policy_default_allows_an_agent_no_rule_names():
    _, body = _policy_world().call("POST", "accounts", "/api/policy/decide", _question("agt_c"))
    assert body == {"allow": True, "reasons": ["default-allow"], "policyVersion": "pol_1"}


def test_policy_decide_needs_the_policy_scope():
    world = World(small_scenario())
    limited = world.suite.accounts.add_credential(["cards:read"])
    status, body = world.call(
        "POST", "accounts", "/api/policy/decide", _question("agt_ada"), token=world.token("accounts", limited)
    )
    assert status == 403 and body["error"]["code"] == "insufficient_scope"
    status, _ = world.call("POST", "accounts", "/api/policy/decide", _question("agt_ada"), token=limited)
    assert status == 403


def test_policy_decide_accepts_the_service_credential_itself(world):
    status, _ = world.call(
        "POST", "accounts", "/api/policy/decide", _question("agt_ada"), token=world.suite.credential
    )
    assert status == 200


def test_policy_question_without_an_agent_is_refused_400(world):
    status, body = world.call("POST", "accounts", "/api/policy/decide", {"boardId": "brd_r"})
    assert status == 400 and body["error"]["code"] == "invalid_request"


def test_accounts_down_answers_503_and_issued_tokens_still_work(world):
    token = world.token("superpipeline")
    world.suite.toggles.accounts_up = False
    status, _, raw = world.suite.handle(
        "POST",
        world.url("accounts", "/api/token/service"),
        headers={"Authorization": f"Bearer {world.suite.credential}"},
        body=json.dumps({"audience": world.suite.urls.superpipeline}).encode(),
    )
    assert status == 503 and json.loads(raw)["error"]["code"] == "unavailable"
    assert world.call("GET", "superpipeline", "/v1/boards/brd_r", token=token)[0] == 200


def test_a_suite_built_twice_has_distinct_secrets():
    one, two = Suite(small_scenario()), Suite(small_scenario())
    assert one.credential != two.credential and one.relay.secret != two.relay.secret
