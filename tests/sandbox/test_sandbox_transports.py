"""The in-process adapter and the real HTTP servers give the same answers for the same requests."""

import json

import pytest
import requests

from sandbox import SandboxServers, Suite, mount, sandbox_session
from tests.support.sandbox_world import small_scenario


def _token(session: requests.Session, suite: Suite, product: str) -> str:
    answer = session.post(
        suite.urls.accounts + "/api/token/service",
        headers={"Authorization": f"Bearer {suite.credential}"},
        json={"audience": suite.urls.audience(product)},
        timeout=5,
    )
    answer.raise_for_status()
    return answer.json()["access_token"]


def _conversation(session: requests.Session, suite: Suite) -> list:
    """A fixed series of requests over every product; the answers with tokens left out."""
    pipeline = _token(session, suite, "superpipeline")
    agentpod = _token(session, suite, "agentpod")
    witness = _token(session, suite, "superwitness")
    sp, ap, sw = (
        (lambda t: {"Authorization": f"Bearer {t}"})(pipeline),
        {"Authorization": f"Bearer {agentpod}"},
        {"Authorization": f"Bearer {witness}"},
    )
    calls = [
        session.get(suite.urls.superpipeline + "/v1/boards/brd_r", headers=sp, timeout=5),
        session.get(
            suite.urls.superpipeline + "/v1/boards/brd_r/cards/card_1001/eligibility", headers=sp, timeout=5
        ),
        session.put(
            suite.urls.superpipeline + "/v1/boards/brd_r/cards/card_1001/reservation",
            headers=sp,
            json={"agentId": "agt_ada", "seconds": 60},
            timeout=5,
        ),
        session.put(
            suite.urls.superpipeline + "/v1/boards/brd_r/cards/card_1001/reservation",
            headers=sp,
            json={"agentId": "agt_ada", "seconds": 600},
            timeout=5,
        ),
        session.put(
            suite.urls.superpipeline + "/v1/boards/brd_r/scheduling",
            headers=sp,
            json={"placementWindowSeconds": 10},
            timeout=5,
        ),
        session.get(suite.urls.superpipeline + "/v1/agents/load", headers=sp, timeout=5),
        session.get(suite.urls.superpipeline + "/v1/boards/brd_r", headers=ap, timeout=5),
        session.get(suite.urls.agentpod + "/api/bridge/boards/brd_r/roster", headers=ap, timeout=5),
        session.get(suite.urls.agentpod + "/api/catalog/stations", headers=ap, timeout=5),
        session.get(
            suite.urls.superwitness + "/v1/runs?status=succeeded&status=failed&limit=1", headers=sw, timeout=5
        ),
        session.post(
            suite.urls.accounts + "/api/policy/decide",
            headers={"Authorization": f"Bearer {suite.credential}"},
            json={"principalId": "prn_ada", "agentId": "agt_ada", "boardId": "brd_r", "stageKey": "review"},
            timeout=5,
        ),
        session.get(suite.urls.superpipeline + "/v1/missing", headers=sp, timeout=5),
    ]
    return [(r.status_code, r.headers["Content-Type"], r.json()) for r in calls]


def _suite() -> Suite:
    suite = Suite(small_scenario())
    suite.pipeline.add_card("brd_r")
    for i in range(3):
        suite.witness.record("prn_ada", "succeeded", "brd_r", "review", suite.clock(), None)
    return suite


def test_the_adapter_and_the_http_servers_answer_alike():
    in_process = _suite()
    answers_in_process = _conversation(sandbox_session(in_process), in_process)
    served = _suite()
    with SandboxServers(served) as servers:
        assert served.urls.superpipeline.startswith("http://127.0.0.1:")
        with requests.Session() as session:
            answers_served = _conversation(session, served)
    assert servers.ports == {"superpipeline": 0, "accounts": 0, "agentpod": 0, "superwitness": 0}
    assert answers_served == answers_in_process
    statuses = [status for status, _, _ in answers_in_process]
    assert statuses == [200, 200, 200, 400, 200, 200, 401, 200, 200, 200, 200, 404]


def test_the_adapter_refuses_an_address_no_product_answers():
    suite = Suite(small_scenario())
    session = mount(requests.Session(), suite)
    session.mount("http://nowhere.sandbox/", session.get_adapter(suite.urls.superpipeline + "/"))
    with pytest.raises(requests.ConnectionError):
        session.get("http://nowhere.sandbox/v1/boards/brd_r", timeout=5)


def test_servers_stop_and_free_their_ports():
    suite = Suite(small_scenario())
    servers = SandboxServers(suite)
    urls = servers.start()
    url = urls.superwitness + "/v1/runs"
    assert requests.get(url, timeout=5).status_code == 401
    servers.stop()
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=5)


def test_dispatch_config_names_every_setting_the_service_reads():
    suite = Suite(small_scenario())
    env = suite.dispatch_config().as_env()
    assert env == {
        "SUPERPIPELINE_URL": "http://superpipeline.sandbox",
        "ORG_PLANE_URL": "http://accounts.sandbox",
        "AGENTPOD_URL": "http://agentpod.sandbox",
        "AGENTPOD_AUDIENCE": "http://agentpod.sandbox",
        "SUPERWITNESS_URL": "http://superwitness.sandbox",
        "SUPERWITNESS_AUDIENCE": "http://superwitness.sandbox",
        "ORG_PLANE_SERVICE_CREDENTIAL": suite.credential,
        "TREATY_RELAY_DELIVERY_SECRET": suite.relay.secret,
    }


def test_handle_reads_the_query_from_the_url_and_the_argument_alike():
    suite = Suite(small_scenario())
    for i in range(3):
        suite.witness.record("prn_ada", "succeeded", "brd_r", "review", suite.clock(), None)
    session = sandbox_session(suite)
    token = _token(session, suite, "superwitness")
    headers = {"Authorization": f"Bearer {token}"}
    by_url = suite.handle("GET", suite.urls.superwitness + "/v1/runs?limit=2", None, headers, b"")
    by_argument = suite.handle("GET", suite.urls.superwitness + "/v1/runs", {"limit": ["2"]}, headers, b"")
    assert by_url == by_argument and len(json.loads(by_url[2])["runs"]) == 2
