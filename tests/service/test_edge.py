"""Bad input stops at the edge: every oddity of a request is a 4xx in the API's error shape (or
the bare 401), counted when it reaches the relay, and never a 500 or an error in the log."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import logging
import time

import pytest
from django.conf import settings
from django.test import Client

from records.models import Board, RelayDelivery
from records.store.actions.boards import do_opt_in
from superdispatch import relay
from tests.conftest import T0
from tests.service.test_metrics import Scrape
from tests.service.test_relay import READY, deliver, enqueued  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

DEEP = b"[" * 10_000 + b"]" * 10_000
BODY_LIMIT = 256 * 1024


class Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def logged():
    """What the service's and Django's loggers wrote during the test (ours do not propagate)."""
    handler = Records()
    loggers = [logging.getLogger(name) for name in ("superdispatch", "django")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler.records
    for logger in loggers:
        logger.removeHandler(handler)


def errors(records) -> list[str]:
    return [r.getMessage() for r in records if r.levelno >= logging.ERROR]


def signed(body: bytes, delivery: str = "dlv_chunked") -> dict:
    """The headers of a fresh delivery of this body, signed with the relay's secret."""
    ts = str(int(time.time()))
    mac = hmac.new(settings.SUPERDISPATCH.relay_secret.encode(), ts.encode() + b"." + body, hashlib.sha256)
    return {
        "HTTP_X_TREATY_TIMESTAMP": ts,
        "HTTP_X_TREATY_SIGNATURE": "sha256=" + mac.hexdigest(),
        "HTTP_X_TREATY_DELIVERY": delivery,
    }


def relayed(api, result: str):
    """How many relay answers the metric counted under `result` so far."""
    return Scrape(api).value("superdispatch_relay_deliveries_total", result=result)


def assert_error(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    if code is not None:
        assert body["error"]["code"] == code, body
    return body["error"]


# --- The relay's timestamp and signature -----------------------------------------------------

ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


@pytest.mark.parametrize(
    "timestamp", ["9" * 400, "9" * 5000, "²", "1.5", "-5", "+1800000000", "1_800_000_000", "", "0x10"]
)
def test_a_timestamp_not_of_ascii_digits_is_refused_as_a_stale_one_and_logs_no_error(
    client, timestamp, logged, enqueued
):
    response = client.post(
        "/v1/relay/events",
        data=b"{}",
        content_type="application/json",
        HTTP_X_TREATY_TIMESTAMP=timestamp,
        HTTP_X_TREATY_SIGNATURE="x",
        HTTP_X_TREATY_DELIVERY="dlv_1",
    )
    assert_error(response, 401, "stale-or-missing-timestamp")
    assert errors(logged) == [] and enqueued == []


def test_the_current_time_in_other_digits_is_refused_even_when_signed(client, enqueued):
    do_opt_in("brd_a", T0)
    now = str(int(time.time()))
    assert deliver(client, READY, ts=now.translate(ARABIC_INDIC)).status_code == 401
    assert deliver(client, READY, ts=now).status_code == 202


@pytest.mark.parametrize("signature", ["sha256=é", "sha256=\u2603", "\x00"])
def test_a_signature_that_is_not_ascii_is_a_bad_signature(client, signature, logged):
    response = client.post(
        "/v1/relay/events",
        data=b"{}",
        content_type="application/json",
        HTTP_X_TREATY_TIMESTAMP=str(int(time.time())),
        HTTP_X_TREATY_SIGNATURE=signature,
        HTTP_X_TREATY_DELIVERY="dlv_1",
    )
    assert_error(response, 401, "bad-signature")
    assert errors(logged) == []


@pytest.mark.parametrize("delivery", ["dlv\x00", "dlv 1", "d\u00e9", "x" * 201])
def test_a_signed_delivery_with_an_odd_delivery_id_is_400(client, delivery, enqueued):
    do_opt_in("brd_a", T0)
    assert_error(deliver(client, READY, delivery=delivery), 400, "bad-delivery")
    assert not RelayDelivery.objects.exists() and enqueued == []


@pytest.mark.parametrize(
    "event",
    [
        {**READY, "boardId": "brd_a\x00"},
        {**READY, "boardId": "a b"},
        {**READY, "cardId": "card_\x00"},
        {**READY, "cardId": "7"},
        {**READY, "boardId": "brd_" + "a" * 300},
    ],
)
def test_a_signed_event_naming_ids_of_the_wrong_shape_is_400(client, event, enqueued):
    do_opt_in("brd_a", T0)
    assert_error(deliver(client, event), 400, "bad-event")
    assert not RelayDelivery.objects.exists() and enqueued == []


# --- A signed body that cannot be read ----------------------------------------------------------


@pytest.mark.parametrize(
    "body", [DEEP, b"[" * 40 + b"]" * 40, b"\xff\xfe{", b"{nope", b'{"type": NaN}', b"9" * 5000]
)
def test_a_signed_body_that_cannot_be_read_is_400_counted_and_logged_once_untraced(
    api, body, logged, enqueued
):
    before = relayed(api, "unreadable")
    logged.clear()
    response = deliver(api, None, body=body)
    assert_error(response, 400, "bad-json")
    assert relayed(api, "unreadable") == before + 1
    lines = [r for r in logged if r.levelno >= logging.WARNING]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert lines[0].exc_info is None and "/v1/relay/events" not in lines[0].getMessage()
    assert enqueued == []


def test_a_signed_event_of_the_wrong_shape_is_counted_as_unreadable_too(api, enqueued):
    before = relayed(api, "unreadable")
    assert_error(deliver(api, None, body=b"[]"), 400, "bad-event")
    assert relayed(api, "unreadable") == before + 1


# --- Every relay answer is counted ------------------------------------------------------------


def test_a_relay_answer_of_500_is_counted_as_an_error(api, monkeypatch):
    do_opt_in("brd_a", T0)

    def broken(event, delivery):
        raise RuntimeError("a fault below the webhook")

    monkeypatch.setattr(relay, "accept", broken)
    before = relayed(api, "error")
    unraised = Client(raise_request_exception=False)
    assert deliver(unraised, READY).status_code == 500
    assert relayed(api, "error") == before + 1


def test_a_relay_body_refused_for_its_size_is_counted(api):
    before = relayed(api, "refused")
    for size in (70 * 1024, BODY_LIMIT + 1):
        response = api.post("/v1/relay/events", data=b"x" * size, content_type="application/json")
        assert_error(response, 413, "too-large")
        body = b"x" * size
        assert_error(chunked(api, "POST", "/v1/relay/events", body, **signed(body)), 413, "too-large")
    assert relayed(api, "refused") == before + 4


# --- Times out of range -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path,name",
    [
        ("/v1/decisions?before=9999-12-31T23:59:59-14:00", "before"),
        ("/v1/decisions?before=0001-01-01T00:00:00%2B14:00", "before"),
        ("/v1/dataset?since=0001-01-01T00:00:00%2B14:00", "since"),
        ("/v1/dataset?since=9999-12-31T23:59:59-00:01&format=json", "since"),
    ],
)
def test_a_time_whose_utc_is_out_of_range_is_a_400_naming_it(api, path, name):
    error = assert_error(api.get(path), 400, "bad-parameter")
    assert error["message"].startswith(f"{name} must be a time")


def test_a_training_since_out_of_range_is_a_400_naming_it(api):
    response = api.post(
        "/v1/models/train", data=b'{"since":"9999-12-31T23:59:59-14:00"}', content_type="application/json"
    )
    assert assert_error(response, 400, "bad-field")["message"].startswith("since must be a time")


# --- JSON too deep, bodies too large, chunked bodies -------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/x-www-form-urlencoded",
        "text/plain",
        "",
        "multipart/form-data; boundary=x",
    ],
)
@pytest.mark.parametrize("body", [DEEP, b'{"seed": ' + b"[" * 100 + b"]" * 100 + b"}"])
def test_json_nested_too_deep_is_a_400_under_every_content_type(api, content_type, body, logged):
    response = api.generic("POST", "/v1/models/train", body, content_type=content_type)
    assert "deep" in assert_error(response, 400, "bad-json")["message"]
    assert errors(logged) == []


def test_json_nested_a_little_is_read_as_before(api):
    response = api.post("/v1/models/train", data=b'{"seed": [[[[1]]]]}', content_type="application/json")
    assert_error(response, 400, "bad-field")


def test_a_body_over_the_limit_is_a_413_that_says_the_limit(api):
    big = json.dumps({"pad": "x" * BODY_LIMIT})
    response = api.post("/v1/models/train", data=big, content_type="application/json")
    assert str(BODY_LIMIT) in assert_error(response, 413, "too-large")["message"]


def test_a_content_length_that_is_not_a_number_is_a_400(api):
    response = api.generic(
        "POST", "/v1/models/train", b"{}", content_type="application/json", CONTENT_LENGTH="12abc"
    )
    assert_error(response, 400, "bad-content-length")


def chunked(api, method: str, path: str, body: bytes, terminated: bool = True, **extra):
    """A request whose body comes chunked: no Content-Length, and a server that (as gunicorn
    does) says it ends the input at the body's end, or (as wsgiref does) does not."""
    environ = {"HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": io.BytesIO(body)}
    if terminated:
        environ["wsgi.input_terminated"] = True
    return api.generic(method, path, b"", content_type="application/json", **environ, **extra)


def test_a_chunked_body_is_read_not_ignored(api):
    assert_error(chunked(api, "PUT", "/v1/boards/brd_a", b'{"x": 1}'), 400, "unexpected-body")
    assert not Board.objects.exists()
    response = chunked(api, "POST", "/v1/models/train", b'{"seed": "1"}')
    assert assert_error(response, 400, "bad-field")["message"].startswith("seed must be")
    assert chunked(api, "PUT", "/v1/boards/brd_a", b"").status_code == 200


def test_a_chunked_body_over_the_limit_is_a_413(api):
    response = chunked(api, "POST", "/v1/models/train", b"x" * (BODY_LIMIT + 1))
    assert str(BODY_LIMIT) in assert_error(response, 413, "too-large")["message"]


def test_a_chunked_body_a_server_cannot_end_is_refused_with_411(api):
    response = chunked(api, "PUT", "/v1/boards/brd_a", b'{"x": 1}', terminated=False)
    assert_error(response, 411, "length-required")
    assert not Board.objects.exists()


def test_a_chunked_relay_delivery_is_read_and_verified(client, enqueued):
    do_opt_in("brd_a", T0)
    body = json.dumps(READY).encode()
    response = chunked(client, "POST", "/v1/relay/events", body, **signed(body))
    assert response.status_code == 202, response.content
    assert enqueued == [("place", ("brd_a", "card_7", None, "dlv_chunked"))]


# --- Headers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/v1/boards", "/v1/nowhere", "/healthz", "/v1/decisions?x=1", "/v1/schema", "/v1/docs"]
)
def test_api_answers_are_not_stored_and_carry_a_content_security_policy(api, path):
    response = api.get(path)
    assert response["Cache-Control"] == "no-store"
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy


def test_a_refusal_is_not_stored_either(client):
    response = client.get("/v1/boards")
    assert response.status_code == 401 and response.content == b""
    assert response["Cache-Control"] == "no-store"


def test_the_admin_keeps_its_own_cache_control_and_gets_the_policy(client):
    response = client.get("/admin/login/")
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]
    assert "Content-Security-Policy" in response


def test_the_docs_page_does_not_open_its_window_to_other_origins(api):
    response = api.get("/v1/docs")
    assert response.status_code == 200
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"


@pytest.mark.parametrize("method", ["post", "put", "delete", "patch"])
@pytest.mark.parametrize("path", ["/v1/schema", "/v1/docs"])
def test_a_method_the_schema_and_docs_do_not_allow_is_a_405_in_the_error_shape(api, method, path):
    assert_error(getattr(api, method)(path), 405, "method-not-allowed")


@pytest.mark.parametrize("accept", ["text/html", "application/xml", "text/yaml"])
def test_the_relay_answers_json_whatever_it_is_asked(client, accept):
    response = client.post(
        "/v1/relay/events", data=b"{}", content_type="application/json", HTTP_ACCEPT=accept
    )
    assert_error(response, 401)


# --- NUL ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/admin/records/decision/?board_id=%00",
        "/admin/records/decision/pld_%00/change/",
        "/admin/records/board/?q=a%00b",
        "/v1/decisions?board=brd_a%00",
        "/v1/boards/brd_%00",
        "/v1/decisions?%00=1",
    ],
)
def test_a_nul_in_the_path_or_query_is_a_400_wherever_it_is_sent(staff, path, logged):
    assert_error(staff.get(path), 400, "bad-request")
    assert errors(logged) == []
