"""The HTTP base, through real calls: timeouts, the retry budget, writes sent once, errors."""

from __future__ import annotations

import logging
import socket

import msgspec
import pytest
import requests

from superdispatch.clients import (
    Accounts,
    BadShape,
    Refused,
    SuperPipeline,
    Unavailable,
)
from superdispatch.clients.http import Http

from . import bodies
from .conftest import CREDENTIAL
from .server import Reply

BOARD = "/v1/boards/brd_1"
WINDOW = "/v1/boards/brd_1/scheduling"


@pytest.fixture
def quick(suite, mint, naps) -> SuperPipeline:
    """A client with a tiny read timeout, for answers the server holds back."""
    accounts = Accounts(suite.url, CREDENTIAL, sleep=naps.append)
    return SuperPipeline(suite.url, accounts, timeout=(1.0, 0.1), sleep=naps.append)


def test_read_retries_a_5xx_and_returns_the_answer_within_the_budget(suite, pipeline, naps):
    suite.route("GET", BOARD, Reply(503), Reply(502), Reply(200, bodies.board()))
    assert pipeline.board("brd_1").board_id == "brd_1"
    assert len(suite.hits("GET", BOARD)) == 3
    assert naps == [0.2, 0.5]


def test_read_gives_up_after_two_retries_as_unavailable(suite, pipeline):
    suite.route("GET", BOARD, Reply(503, {"error": {"code": "overloaded"}}))
    with pytest.raises(Unavailable) as caught:
        pipeline.board("brd_1")
    assert (caught.value.status, caught.value.code, caught.value.permanent) == (503, "overloaded", False)
    assert len(suite.hits("GET", BOARD)) == 3


def test_read_timeout_is_retried_then_unavailable(suite, quick):
    suite.route("GET", BOARD, Reply(200, bodies.board(), hold=True))
    with pytest.raises(Unavailable) as caught:
        quick.board("brd_1")
    assert (caught.value.status, caught.value.code) == (None, "timeout")
    assert len(suite.hits("GET", BOARD)) == 3


def test_read_answered_after_one_timeout_succeeds(suite, quick):
    suite.route("GET", BOARD, Reply(200, bodies.board(), hold=True), Reply(200, bodies.board()))
    assert quick.board("brd_1").name == "Review"
    assert len(suite.hits("GET", BOARD)) == 2


def test_refusal_is_not_retried(suite, pipeline, naps):
    suite.route("GET", BOARD, Reply(403, {"error": {"code": "forbidden", "message": "no"}}))
    with pytest.raises(Refused) as caught:
        pipeline.board("brd_1")
    assert (caught.value.status, caught.value.code, caught.value.permanent) == (403, "forbidden", True)
    assert len(suite.hits("GET", BOARD)) == 1
    assert naps == []


def test_write_is_sent_once_even_on_5xx(suite, pipeline):
    suite.route("PUT", WINDOW, Reply(503), Reply(200, {"placementWindowSeconds": 10}))
    with pytest.raises(Unavailable):
        pipeline.set_placement_window("brd_1", 10)
    assert len(suite.hits("PUT", WINDOW)) == 1


def test_write_timeout_is_not_retried(suite, quick):
    suite.route("PUT", WINDOW, Reply(200, {"placementWindowSeconds": 10}, hold=True))
    with pytest.raises(Unavailable) as caught:
        quick.set_placement_window("brd_1", 10)
    assert caught.value.code == "timeout"
    assert len(suite.hits("PUT", WINDOW)) == 1


def closed_port() -> str:
    """The URL of a local port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def test_unreachable_product_is_unavailable(naps):
    http = Http("superpipeline", closed_port(), timeout=(0.5, 0.5), sleep=naps.append)
    with pytest.raises(Unavailable) as caught:
        http.call("GET", "/v1/agents/load", msgspec.json.decode, read=True)
    assert caught.value.code == "unreachable"
    assert len(naps) == 2


def test_answer_that_is_not_json_is_bad_shape_and_not_retried(suite, pipeline):
    suite.route("GET", BOARD, Reply(200, raw=b"<html>gateway</html>"))
    with pytest.raises(BadShape) as caught:
        pipeline.board("brd_1")
    assert caught.value.code == "bad-shape"
    assert len(suite.hits("GET", BOARD)) == 1


@pytest.mark.parametrize(
    "status, body, code",
    [
        (200, {"error": {"code": "board-archived", "message": "gone"}}, "board-archived"),
        (404, {"error": "board not found"}, "http-404"),  # a sentence is not a code
        (404, {"error": "board_missing"}, "board_missing"),
        (404, None, "http-404"),
        (410, {"something": "else"}, "http-410"),
    ],
)
def test_error_body_code_names_the_refusal(suite, pipeline, status, body, code):
    suite.route("GET", BOARD, Reply(status, body))
    with pytest.raises(Refused) as caught:
        pipeline.board("brd_1")
    assert caught.value.code == code


@pytest.mark.parametrize("status", [408, 429])
def test_throttling_is_transient_and_retried(suite, pipeline, status):
    suite.route("GET", BOARD, Reply(status), Reply(200, bodies.board()))
    assert pipeline.board("brd_1").board_id == "brd_1"


def test_redirect_is_refused_not_followed(suite, pipeline):
    suite.route("GET", BOARD, Reply(302, {}))
    with pytest.raises(Refused) as caught:
        pipeline.board("brd_1")
    assert caught.value.code == "http-302"
    assert [r.path for r in suite.requests if r.path != "/api/token/service"] == [BOARD]


def test_failure_is_logged_once_on_one_line_naming_product_route_and_status(suite, pipeline, caplog):
    suite.route("GET", BOARD, Reply(503))
    with caplog.at_level(logging.WARNING, logger="superdispatch.clients"):
        with pytest.raises(Unavailable):
            pipeline.board("brd_1")
    assert [r.getMessage() for r in caplog.records] == [
        "superpipeline GET /v1/boards/brd_1: http-503 after 3 attempts"
    ]


def test_ids_are_escaped_into_one_path_segment(suite, pipeline):
    suite.route("GET", "/v1/boards/brd_1%2F..%2Fagents", Reply(200, bodies.board()))
    pipeline.board("brd_1/../agents")
    assert suite.requests[-1].path == "/v1/boards/brd_1%2F..%2Fagents"


def test_product_refusing_a_token_makes_the_next_call_mint_a_new_one(suite, mint, pipeline):
    suite.route("GET", BOARD, Reply(401), Reply(200, bodies.board()))
    with pytest.raises(Refused):
        pipeline.board("brd_1")
    pipeline.board("brd_1")
    tokens = [r.headers["authorization"] for r in suite.hits("GET", BOARD)]
    assert tokens == ["Bearer tok-SECRET-1", "Bearer tok-SECRET-2"]


def test_token_refused_by_accounts_is_the_calls_refusal_and_nothing_is_sent(suite, naps):
    suite.route("POST", "/api/token/service", Reply(401, {"error": "bad credential"}))
    accounts = Accounts(suite.url, CREDENTIAL, sleep=naps.append)
    pipeline = SuperPipeline(suite.url, accounts, sleep=naps.append)
    with pytest.raises(Refused) as caught:
        pipeline.board("brd_1")
    assert (caught.value.product, caught.value.status) == ("accounts", 401)
    assert suite.hits("GET", BOARD) == []


def test_accounts_down_is_the_calls_outage(suite, naps):
    suite.route("POST", "/api/token/service", Reply(500))
    accounts = Accounts(suite.url, CREDENTIAL, sleep=naps.append)
    pipeline = SuperPipeline(suite.url, accounts, sleep=naps.append)
    with pytest.raises(Unavailable) as caught:
        pipeline.board("brd_1")
    assert caught.value.product == "accounts"
    assert suite.hits("GET", BOARD) == []


def test_the_environments_proxy_is_honoured_and_read_once_when_the_client_is_made(suite, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", suite.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    suite.route("GET", "/v1/ping", Reply(200, {"ok": True}))
    through_proxy = Http("superpipeline", "http://products.example")  # a name only the proxy knows
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens: unread from now on
    assert through_proxy.call("GET", "/v1/ping", msgspec.json.decode) == {"ok": True}
    [hit] = suite.hits("GET", "/v1/ping")
    assert hit.headers["host"] == "products.example"


def test_no_proxy_sends_its_hosts_direct(suite, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    suite.route("GET", "/v1/ping", Reply(200, {"ok": True}))
    assert Http("superpipeline", suite.url).call("GET", "/v1/ping", msgspec.json.decode) == {"ok": True}


# --- the read retries -------------------------------------------------------------------


def test_a_read_is_retried_on_no_connection_and_a_write_is_not(naps):
    http = Http("superpipeline", closed_port(), timeout=(0.5, 0.5), sleep=naps.append)
    with pytest.raises(Unavailable) as caught:
        http.call("POST", "/api/token/service", msgspec.json.decode, body={}, read=True)
    assert (caught.value.code, caught.value.attempts) == ("unreachable", 3)
    assert naps == [0.2, 0.5]


def test_a_given_sessions_adapters_decide_its_retries(suite, naps):
    suite.route("GET", BOARD, Reply(503), Reply(200, bodies.board()))
    http = Http("superpipeline", suite.url, session=requests.Session(), sleep=naps.append)
    with pytest.raises(Unavailable) as caught:
        http.call("GET", BOARD, msgspec.json.decode, read=True)
    assert (caught.value.status, caught.value.attempts) == (503, 1)
    assert len(suite.hits("GET", BOARD)) == 1 and naps == []


def test_a_not_implemented_read_is_refused_at_once(suite, pipeline, naps):
    suite.route("GET", BOARD, Reply(501), Reply(200, bodies.board()))
    with pytest.raises(Refused) as caught:
        pipeline.board("brd_1")
    assert (caught.value.status, caught.value.code) == (501, "http-501")
    assert len(suite.hits("GET", BOARD)) == 1 and naps == []


def test_a_retry_after_header_is_not_waited_on(suite, pipeline, naps):
    suite.route("GET", BOARD, Reply(503, headers=(("Retry-After", "120"),)), Reply(200, bodies.board()))
    assert pipeline.board("brd_1").board_id == "brd_1"
    assert naps == [0.2]


def test_a_write_to_a_closed_port_is_tried_once(naps):
    http = Http("superpipeline", closed_port(), timeout=(0.5, 0.5), sleep=naps.append)
    with pytest.raises(Unavailable) as caught:
        http.call("PUT", "/v1/boards/brd_1/scheduling", msgspec.json.decode, body={})
    assert (caught.value.code, caught.value.attempts) == ("unreachable", 1)
    assert naps == []


def test_a_timed_out_read_is_logged_once_in_all_with_each_retry_on_a_line_of_its_own(suite, quick, caplog):
    suite.route("GET", BOARD, Reply(200, bodies.board(), hold=True))
    with caplog.at_level(logging.INFO, logger="superdispatch.clients"):
        with pytest.raises(Unavailable):
            quick.board("brd_1")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == ["superpipeline GET /v1/boards/brd_1: timeout after 3 attempts"]
    retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert retries == [
        "superpipeline GET /v1/boards/brd_1: timeout; retrying (1 of 2)",
        "superpipeline GET /v1/boards/brd_1: timeout; retrying (2 of 2)",
    ]


def test_a_retried_answer_is_logged_by_status_and_never_with_its_query(suite, mint, naps, caplog):
    witness_path = "/v1/runs"
    suite.route("GET", witness_path, Reply(503), Reply(200, {"ok": True}))
    http = Http("superwitness", suite.url, sleep=naps.append)
    with caplog.at_level(logging.INFO, logger="superdispatch.clients"):
        http.call("GET", witness_path, msgspec.json.decode, params=[("stage", "secret-ish")], read=True)
    assert [r.getMessage() for r in caplog.records] == [
        "superwitness GET /v1/runs: http-503; retrying (1 of 2)"
    ]


@pytest.mark.parametrize(
    "method, path, params, body, headers",
    [
        ("GET", "/v1/boards/brd%2F1/cards", None, None, {}),
        (
            "GET",
            "/v1/runs",
            [("status", "succeeded"), ("status", "failed"), ("scope", "a b&c=d")],
            None,
            {"Authorization": "Bearer t0k.en"},
        ),
        (
            "POST",
            "/v1/boards/brd_1/cards/crd_1/reservation",
            None,
            {"agentId": "agt_é", "seconds": 60},
            {"Authorization": "Bearer x"},
        ),
        ("PUT", "/v1/boards/brd_1/scheduling", None, {"placementWindowSeconds": 10}, {}),
        ("DELETE", "/v1/boards/brd_1/cards/crd_1/reservation", None, None, {}),
    ],
)
def test_a_call_arrives_as_requests_would_have_sent_it(suite, method, path, params, body, headers):
    """The pool and a requests session put the same request on the wire, but for the
    headers each says of itself (its User-Agent and Accept)."""
    suite.route(method, path, Reply(200, {}))
    Http("superpipeline", suite.url).call(
        method, path, msgspec.json.decode, params=params, body=body, headers=headers
    )
    Http("superpipeline", suite.url, session=requests.Session()).call(
        method, path, msgspec.json.decode, params=params, body=body, headers=headers
    )
    ours, theirs = suite.hits(method, path)
    assert (ours.path, ours.query, ours.body) == (theirs.path, theirs.query, theirs.body)
    own = {"user-agent", "accept", "connection"}
    assert {k: v for k, v in ours.headers.items() if k not in own} == {
        k: v for k, v in theirs.headers.items() if k not in own
    }


def test_a_header_that_would_split_its_line_is_refused_before_anything_is_sent(suite, naps):
    suite.route("GET", "/v1/x", Reply(200, {}))
    http = Http("superpipeline", suite.url, sleep=naps.append)
    with pytest.raises(Unavailable):
        http.call("GET", "/v1/x", msgspec.json.decode, headers={"X-Note": "a\r\nInjected: 1"})
    assert suite.hits("GET", "/v1/x") == []
    assert http.call("GET", "/v1/x", msgspec.json.decode, headers={"X-Note": "plain"}) == {}
