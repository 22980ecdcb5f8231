"""Every route the sandbox serves, per product, with the products' auth and error shapes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .clock import rfc3339
from .replies import Refused, Reply, bare_error, error, ok

if TYPE_CHECKING:
    from .suite import Suite


@dataclass(frozen=True)
class Request:
    method: str
    params: dict[str, str]  # the `:name` parts of the route
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except (ValueError, UnicodeDecodeError):
            raise Refused(400, "invalid_json", "the body is not JSON") from None


Handler = Callable[["Suite", Request], Reply]
PROXY_PAGE = b"<html><body>502 Bad Gateway</body></html>"  # a proxy's page where JSON was due


# -- SuperPipeline ------------------------------------------------------------------------


def board_read(suite: Suite, request: Request) -> Reply:
    suite.accounts.authorize(request.headers, suite.urls.audience("superpipeline"), "cards:read")
    board_id = request.params["board"]
    failure = suite.toggles.board_failures.get(board_id)
    if failure == "500":
        return error(500, "internal", "the board could not be read")
    if failure == "404":
        return error(404, "board_not_found", f"no board {board_id}")
    if failure == "garbage":
        return Reply(200, PROXY_PAGE)
    if failure == "shape":
        return ok({"boardId": board_id, "stages": None})
    return ok(suite.pipeline.board_json(board_id))


def eligibility(suite: Suite, request: Request) -> Reply:
    suite.accounts.authorize(request.headers, suite.urls.audience("superpipeline"), "dispatch:read")
    answer = suite.pipeline.eligibility_json(request.params["board"], request.params["card"])
    return ok({**answer, "agents": suite.pipeline.encoded_verdicts(answer["agents"])})


def reservation(suite: Suite, request: Request) -> Reply:
    if not suite.toggles.reservation_verb:
        return bare_error(404, "not found")
    suite.accounts.authorize(request.headers, suite.urls.audience("superpipeline"), "dispatch:reserve")
    body = request.json()
    if not isinstance(body, dict):
        raise Refused(400, "invalid_request", "the body must be an object")
    held = suite.pipeline.reserve(
        request.params["board"], request.params["card"], body.get("agentId"), body.get("seconds")
    )
    return ok({"reservation": {"agentId": held.agent_id, "reservedUntil": rfc3339(held.reserved_until)}})


def scheduling(suite: Suite, request: Request) -> Reply:
    suite.accounts.authorize(request.headers, suite.urls.audience("superpipeline"), "dispatch:reserve")
    body = request.json()
    if not isinstance(body, dict):
        raise Refused(400, "invalid_request", "the body must be an object")
    seconds = suite.pipeline.set_placement_window(request.params["board"], body.get("placementWindowSeconds"))
    return ok({"placementWindowSeconds": seconds})


def agents_load(suite: Suite, request: Request) -> Reply:
    if not suite.toggles.agents_load_verb:
        return bare_error(404, "not found")
    suite.accounts.authorize(request.headers, suite.urls.audience("superpipeline"), "dispatch:read")
    return ok(suite.pipeline.load_json())


# -- AgentPod -----------------------------------------------------------------------------


def roster(suite: Suite, request: Request) -> Reply:
    token = suite.accounts.authorize(request.headers, suite.urls.audience("agentpod"), None)
    if token.credential_id not in suite.agentpod.roster_readers:
        return error(403, "forbidden", "this service is not among the hub's roster readers")
    return ok(suite.agentpod.roster_json(request.params["board"]))


def stations(suite: Suite, request: Request) -> Reply:
    if not suite.toggles.station_registry:
        return bare_error(404, "not found")
    token = suite.accounts.authorize(request.headers, suite.urls.audience("agentpod"), None)
    if token.credential_id not in suite.agentpod.catalog_readers:
        return error(403, "forbidden", "this service is not among the hub's catalog readers")
    return ok(suite.agentpod.catalog_json())


# -- Accounts -----------------------------------------------------------------------------


def service_token(suite: Suite, request: Request) -> Reply:
    return suite.accounts.issue_token(request.headers, request.json())


def policy_decide(suite: Suite, request: Request) -> Reply:
    suite.accounts.authorize_policy(request.headers, suite.urls.audience("accounts"))
    return suite.accounts.decide(request.json())


# -- SuperWitness -------------------------------------------------------------------------


def runs(suite: Suite, request: Request) -> Reply:
    suite.accounts.authorize(request.headers, suite.urls.audience("superwitness"), None)
    return ok(suite.witness.runs_json(request.query))


ROUTES: dict[str, list[tuple[str, str, Handler]]] = {
    "superpipeline": [
        ("GET", "/v1/boards/:board", board_read),
        ("GET", "/v1/boards/:board/cards/:card/eligibility", eligibility),
        ("PUT", "/v1/boards/:board/cards/:card/reservation", reservation),
        ("PUT", "/v1/boards/:board/scheduling", scheduling),
        ("GET", "/v1/agents/load", agents_load),
    ],
    "agentpod": [
        ("GET", "/api/bridge/boards/:board/roster", roster),
        ("GET", "/api/catalog/stations", stations),
    ],
    "accounts": [
        ("POST", "/api/token/service", service_token),
        ("POST", "/api/policy/decide", policy_decide),
    ],
    "superwitness": [("GET", "/v1/runs", runs)],
}

# A product that is down answers every route alike.
_DOWN = {
    "accounts": lambda s: not s.toggles.accounts_up,
    "superwitness": lambda s: not s.toggles.superwitness_up,
}
# What a product under a fault (`Toggles.faults`) answers on every route; `slow` is the
# suite's (it answers, late).
_FAULTY = {
    "down": lambda product: error(503, "unavailable", f"{product} is unavailable"),
    "garbage": lambda product: Reply(200, PROXY_PAGE, {"Content-Type": "text/html"}),
    "401": lambda product: error(401, "invalid_token", "the token is unknown or expired"),
}


def _match(pattern: str, path: str) -> dict[str, str] | None:
    wanted, given = pattern.strip("/").split("/"), path.strip("/").split("/")
    if len(wanted) != len(given):
        return None
    params = {}
    for part, value in zip(wanted, given):
        if part.startswith(":"):
            if not value:
                return None
            params[part[1:]] = value
        elif part != value:
            return None
    return params


def dispatch(
    suite: Suite,
    product: str,
    method: str,
    path: str,
    query: dict[str, list[str]],
    headers: dict[str, str],
    body: bytes,
) -> Reply:
    """The product's answer to one request."""
    faulty = _FAULTY.get(suite.toggles.faults.get(product, ""))
    if faulty is not None:
        return faulty(product)
    down = _DOWN.get(product)
    if down is not None and down(suite):
        return error(503, "unavailable", f"{product} is unavailable")
    allowed = []
    for route_method, pattern, handler in ROUTES[product]:
        params = _match(pattern, path)
        if params is None:
            continue
        if route_method != method.upper():
            allowed.append(route_method)
            continue
        try:
            return handler(suite, Request(method.upper(), params, query, headers, body))
        except Refused as refused:
            return refused.reply
    if allowed:
        return Reply(405, {"error": "method not allowed"}, {"Allow": ", ".join(allowed)})
    return bare_error(404, "not found")
