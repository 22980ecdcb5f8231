"""A whole product failing as products do (down, slow, garbage, 401), the holds SuperPipeline
granted that the fault checks judge SuperDispatch's records by, and a relay held back or
told to try longer."""

import pytest
import requests

from sandbox import sandbox_session
from sandbox.suite import FAULTS, PRODUCTS

ROUTE = {
    "superpipeline": "/v1/boards/brd_r",
    "agentpod": "/api/bridge/boards/brd_r/roster",
    "superwitness": "/v1/runs",
    "accounts": "/api/policy/decide",
}


@pytest.mark.parametrize("product", PRODUCTS)
@pytest.mark.parametrize("fault, status", [("down", 503), ("garbage", 200), ("401", 401)])
def test_a_product_under_a_fault_answers_every_route_so(world, product, fault, status):
    tokens = {p: world.token(p) for p in PRODUCTS if p != "accounts"}
    world.suite.toggles.faults[product] = fault
    method = "POST" if product == "accounts" else "GET"
    answer, body = world.call(method, product, ROUTE[product], token=tokens.get(product, "x"))
    assert answer == status
    if fault == "garbage":
        assert body.startswith(b"<html>")
    others = [p for p in PRODUCTS if p not in (product, "accounts")]
    for other in others:
        assert world.call("GET", other, ROUTE[other], token=tokens[other])[0] == 200
    world.suite.toggles.faults.clear()
    assert world.call(
        method,
        product,
        ROUTE[product],
        token=tokens.get(product),
        body={"agentId": "agt_ada"} if product == "accounts" else None,
    )[0] in (200, 400)


def test_a_slow_product_answers_late_and_times_a_waiting_transport_out(world):
    assert "slow" in FAULTS
    world.suite.toggles.faults["agentpod"] = "slow"
    world.suite.toggles.slow_seconds = 8
    start = world.clock()
    assert world.call("GET", "agentpod", ROUTE["agentpod"])[0] == 200  # no timeout: late
    assert (world.clock() - start).total_seconds() == 8
    session = sandbox_session(world.suite)
    with pytest.raises(requests.ReadTimeout):
        session.get(
            world.url("agentpod", ROUTE["agentpod"]),
            timeout=(2.0, 5.0),
            headers={"Authorization": f"Bearer {world.token('agentpod')}"},
        )
    assert (world.clock() - start).total_seconds() == 13  # the read timeout passed, no more


def test_superpipeline_keeps_every_hold_it_granted(world):
    card = world.card()
    world.clock.advance(3)
    world.call(
        "PUT",
        "superpipeline",
        f"/v1/boards/brd_r/cards/{card.id}/reservation",
        body={"agentId": "agt_ada", "seconds": 60},
    )
    world.call(
        "PUT",
        "superpipeline",
        f"/v1/boards/brd_r/cards/{card.id}/reservation",
        body={"agentId": "agt_bob", "seconds": 60},
    )  # refused: held for agt_ada
    [grant] = world.pipeline.holds_granted
    assert (grant.card_id, grant.agent_id, (grant.reserved_until - grant.at).total_seconds()) == (
        card.id,
        "agt_ada",
        60,
    )


def test_the_relay_holds_back_a_boards_events_for_the_caller_to_send(world):
    sent = []
    world.suite.relay.target = lambda headers, body: sent.append(body) or 202
    world.suite.relay.held_back.add("brd_r")
    world.card()
    world.card(board="brd_o")
    assert len(world.suite.relay.flush()) == 1 and len(world.suite.relay.deliveries) == 2


def test_the_relay_tries_as_often_as_it_is_told(world):
    world.suite.relay.target = lambda headers, body: 503
    world.suite.relay.max_attempts = 5
    world.card()
    for _ in range(7):
        world.suite.relay.flush()
    assert world.suite.relay.deliveries[0].statuses == [503] * 5
