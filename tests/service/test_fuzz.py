"""No bad input is a 500: hypothesis over every route of the URL conf and the relay's webhook.

The rule: every answer is a success, a 4xx or a 503 in the API's error shape
(`{"error": {"code", "message"}}`), or the bare 401; none is a 500, and nothing is logged at
error level. The operator routes are read from the URL conf (a route added later is fuzzed
with the others) and asked with the operator token, mostly, for their paths, queries and
bodies: arbitrary text, huge numbers, extreme dates, NUL, deep JSON, wrong content types,
oversized and chunked bodies. The relay's webhook is asked with arbitrary headers and bodies,
unsigned and signed. Examples are bounded and derandomized: the same requests every run.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import io
import json
import re
import time
from urllib.parse import quote, urlencode

import pytest
from django.conf import settings
from django.test import Client
from django.urls import URLPattern, get_resolver
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, note, settings as hypothesis_settings, strategies as st

from learning import actions as learning_actions
from records.store.actions.boards import do_opt_in
from superdispatch import tasks
from superdispatch.settings_test import TEST_OPERATOR_TOKEN
from tests.service.test_edge import (
    errors,
    logged,  # noqa: F401  (a fixture)
)
from tests.service.test_metrics import Scrape
from tests.support.factories import T0, make_decision, make_suggestion
from tests.support.learning_factories import trainable

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

FUZZ = hypothesis_settings(
    max_examples=25, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)
BODY_LIMIT = settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def operator_routes() -> list[str]:
    """Each route of the URL conf but the admin's, as written there (`v1/boards/<str:board_id>`,
    the catch-all `^v1/`)."""
    return [
        str(p.pattern)
        for p in get_resolver().url_patterns
        if isinstance(p, URLPattern) and not str(p.pattern).startswith("admin/") and p.name != "relay-events"
    ]


@functools.cache
def route_parameters() -> dict[str, dict[str, dict]]:
    """The query parameters each route's schema names, with their schemas
    (`v1/decisions`: board, card, …, before a date-time, limit an integer)."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        path.lstrip("/"): {
            p["name"]: p["schema"]
            for operation in methods.values()
            for p in operation.get("parameters", ())
            if p["in"] == "query"
        }
        for path, methods in schema["paths"].items()
    }


def allowed_methods(route: str) -> list[str]:
    (pattern,) = [p for p in get_resolver().url_patterns if str(p.pattern) == route]
    view = getattr(pattern.callback, "cls", None)
    return [m for m in METHODS if m not in ("HEAD", "OPTIONS") and hasattr(view, m.lower())]


ROUTES = operator_routes()

# --- What is sent --------------------------------------------------------------------------

# The calendar's first day (and last), which a route that reaches back or forth from a time
# cannot step past: what-if reads the day before its `since`.
EDGE_DAYS = [
    "0001-01-01",
    "0001-01-01T00:00:00Z",
    "0001-01-01T23:59:59.999999Z",
    "0001-01-01T12:00:00-11:00",
    "9999-12-31T23:59:59.999999Z",
]
EXTREME_TIMES = EDGE_DAYS + [
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31",
    "0000-01-01",
    "10000-01-01",
    "2026-02-30",
    "2026-11-01T24:00:00Z",
    "2026-11-01T10:00:00+99:00",
    "9999-12-31T23:59:59.999999Z",
    "1e9",
    "now",
]
HUGE_NUMBERS = [
    "9" * 20,
    "9" * 400,
    "9" * 5000,
    "-" + "9" * 30,
    "1e999",
    "NaN",
    "Infinity",
    "0x10",
    "00000000000000000001",
    "²",
    "١٢",
    "1_000",
    "-0",
    "18446744073709551617",
]
IDS = [
    "brd_a",
    "pld_0123456789abcdef01234567",
    "sug_0123456789abcdef01234567",
    "mdl_0123456789abcdef01234567",
    "card_1",
    "agt_ada",
    "brd_" + "a" * 101,
    "pld_",
    "",
]
ODD = [
    "\x00",
    "a\x00b",
    "%00",
    "\ufffd",
    "\u202e",
    " ",
    "\r\n",
    "'; DROP TABLE x; --",
    "../../etc/passwd",
    "<script>",
    "{}",
    "[]",
    "null",
]
text = st.text(max_size=40)
# Any time in Python's range at any offset up to ±23:59 (hypothesis favours the range's ends:
# 9999-12-31T23:59:59.999999-14:00 is past the range in UTC), as RFC 3339 writes it.
times = st.builds(
    lambda moment, offset: moment.isoformat() + offset,
    st.datetimes(),
    st.sampled_from(["-14:00", "Z", "+14:00", "+23:59", "-23:59", ""]),
)
values = st.one_of(text, st.sampled_from(EXTREME_TIMES + HUGE_NUMBERS + IDS + ODD), times)
NAMES = [
    "board",
    "card",
    "agent",
    "before",
    "since",
    "limit",
    "kind",
    "state",
    "format",
    "seed",
    "script",
    "lang",
    "version",
    "name[]",
    "x",
]


def value_for(schema: dict):
    """Anything, and more often what breaks a parameter of this type: extreme times for a
    time, huge and odd numbers for an integer."""
    if schema.get("format") == "date-time":
        return st.one_of(times, values, st.sampled_from(EXTREME_TIMES))
    if schema.get("type") == "integer":
        return st.one_of(st.sampled_from(HUGE_NUMBERS), values, st.sampled_from(HUGE_NUMBERS))
    return values


def queries(parameters: dict[str, dict]):
    """Query strings: the route's own parameters, with any value; mostly none where it takes
    none (any is a 400 there, which would leave the path and body unread)."""
    if parameters:
        own = st.one_of(*[st.tuples(st.just(name), value_for(schema)) for name, schema in parameters.items()])
        return st.one_of(
            st.lists(own, max_size=2), st.lists(st.one_of(own, st.tuples(text, values)), max_size=3)
        )
    return st.one_of(
        st.just([]),
        st.lists(st.tuples(st.one_of(st.sampled_from(NAMES), text), values), max_size=2),
        st.just([]),
    )


def deep(n: int, opener: str = "[") -> bytes:
    closer = {"[": "]", '{"a":': "}"}[opener]
    return (opener * n + "1" + closer * n).encode()


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), values),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
bodies = st.one_of(
    st.just(b""),
    st.dictionaries(st.sampled_from(["since", "seed", "x", ""]), json_values, max_size=3).map(
        lambda d: json.dumps(d).encode()
    ),
    st.sampled_from(
        [
            deep(33),
            deep(10_000),
            deep(10_000, '{"a":'),
            b'{"seed": 1' + b"0" * 5000 + b"}",
            b'{"seed": 1e999}',
            b'{"seed": NaN}',
            b'{"since": "\\u0000"}',
            b"\x00",
            b"\xff\xfe\x00{",
            b'{"a": "\\ud800"}',
            b"x" * (BODY_LIMIT + 1),
            b'{"pad": "' + b"x" * BODY_LIMIT + b'"}',
        ]
    ),
    st.binary(max_size=100),
)
CONTENT_TYPES = [
    "application/json",
    "application/json; charset=utf-16",
    "application/json; charset=nope",
    "text/plain",
    "",
    "*/*",
    "application/xml",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "multipart/form-data",
    "text/html; charset=latin-1",
    "a" * 300,
    "\x00",
    "application/json;;;==",
]
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
# (hypothesis draws the first and last choices of a list most often: the common case is both)
sending = st.sampled_from(["length", "chunked", "chunked, unterminated", "length"])


def segment(name: str):
    """A path segment for a route's parameter: an id of its shape, or anything."""
    return st.one_of(st.sampled_from(IDS), values, st.from_regex(r"[a-z]{3}_[0-9a-f]{24}", fullmatch=True))


def path_of(route: str, draw) -> str:
    if route.startswith("^"):  # the catch-all: whatever follows its prefix
        return "/" + route.lstrip("^") + quote(draw(text), safe="/")
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: quote(draw(segment(m[1])), safe=""), route)


def send(client, method: str, path: str, body: bytes, content_type: str, how: str, **headers):
    note(f"{method} {path} ({how}, {content_type!r}) {headers} {body[:200]!r}")
    environ = {"CONTENT_TYPE": content_type, **headers}
    if how == "length":
        return client.generic(method, path, body, content_type=content_type, **environ)
    environ.update({"HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": io.BytesIO(body)})
    if how == "chunked":
        environ["wsgi.input_terminated"] = True
    return client.generic(method, path, b"", **environ)


def assert_the_rule(response, method: str) -> None:
    """A success; the bare 401; or a 4xx or 503 in the error shape. Never a 500."""
    status = response.status_code
    assert status < 500 or status == 503, (status, response.content[:300])
    if getattr(response, "streaming", False):
        b"".join(response.streaming_content)  # a stream that fails midway is a 500 too
        return
    if status < 400 or method == "HEAD":
        return
    if status == 401 and response.content == b"":
        return
    assert response["Content-Type"].startswith("application/json"), response.content[:300]
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert all(isinstance(v, str) and v for v in body["error"].values()), body


@pytest.fixture
def stocked(monkeypatch):
    """A board, a decision, a suggestion and a model, so real ids reach the routes' reads;
    tasks are not sent."""
    monkeypatch.setattr(tasks.place_card_task, "delay", lambda *a: None)
    monkeypatch.setattr(tasks.look_at_board_task, "apply_async", lambda *a, **k: None)
    do_opt_in("brd_a", T0)
    decision = make_decision(
        board="brd_a", card="card_1", chosen="agt_ada", candidates=[{"agent": "agt_ada", "total": 2.0}]
    )
    suggestion = make_suggestion()
    trainable(40)
    model = learning_actions.do_train(None, 1, now=T0)
    IDS.extend([decision.id, suggestion.id, model.id])
    yield
    del IDS[-3:]


def test_the_routes_fuzzed_are_those_of_the_url_conf():
    assert {
        "v1/boards/<str:board_id>",
        "v1/models/train",
        "v1/schema",
        "v1/docs",
        "metrics",
        "healthz",
        "^v1/",
    } <= set(ROUTES)
    assert len(ROUTES) == len(get_resolver().url_patterns) - 4  # the admin's three, the relay


ANY = "any method"
CASES = [
    (route, method)
    for route in ROUTES
    for method in allowed_methods(route) + [ANY]
    if not route.startswith("^") or method == ANY
]


@pytest.mark.parametrize("route,method", CASES)
def test_no_operator_route_answers_500_whatever_it_is_sent(route, method, stocked, logged):  # noqa: F811
    client = Client(raise_request_exception=True)
    parameters = route_parameters().get(re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route), {})
    methods = st.sampled_from(METHODS) if method == ANY else st.just(method)

    # A route that reads a query is asked more: its parameters' values are the widest input.
    @hypothesis_settings(FUZZ, max_examples=100 if parameters and method == "GET" else 25)
    @given(st.data(), methods, queries(parameters), bodies, st.sampled_from(CONTENT_TYPES), sending)
    def one_request(data, method, params, body, content_type, how):
        path = path_of(route, data.draw)
        if params:
            path += "?" + urlencode(params)
        response = send(
            client, method, path, body, content_type, how, HTTP_AUTHORIZATION=f"Bearer {TEST_OPERATOR_TOKEN}"
        )
        assert_the_rule(response, method)

    one_request()
    assert errors(logged) == []


TIMED = [
    (route, name)
    for route, parameters in sorted(route_parameters().items())
    for name, schema in parameters.items()
    if schema.get("format") == "date-time"
]


def test_every_time_parameter_is_asked_the_calendars_edge_days():
    assert ("v1/what-if", "since") in TIMED and ("v1/decisions", "before") in TIMED


@pytest.mark.parametrize("route,name", TIMED)
@pytest.mark.parametrize("value", EDGE_DAYS)
def test_no_time_parameter_answers_500_on_the_calendars_edge_days(route, name, value, stocked, logged):  # noqa: F811
    response = Client(raise_request_exception=True).get(
        f"/{route}", {name: value}, HTTP_AUTHORIZATION=f"Bearer {TEST_OPERATOR_TOKEN}"
    )
    assert_the_rule(response, "GET")
    assert errors(logged) == []


# --- The relay's webhook -------------------------------------------------------------------


def sign(timestamp: str, body: bytes) -> str:
    mac = hmac.new(
        settings.SUPERDISPATCH.relay_secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256
    )
    return "sha256=" + mac.hexdigest()


latin1 = st.text(st.characters(max_codepoint=255), max_size=40)
timestamps = st.one_of(st.sampled_from(["now"] * 4 + ["stale"]), latin1, st.sampled_from(HUGE_NUMBERS))
ids_in_events = st.one_of(st.sampled_from(["brd_a", "card_1", "brd_x"]), values, json_values)
events = st.fixed_dictionaries(
    {},
    optional={
        "type": st.one_of(st.sampled_from(["card.ready", "card.claimed", ""]), values),
        "boardId": ids_in_events,
        "cardId": ids_in_events,
        "ts": values,
        "data": json_values,
    },
).map(lambda d: json.dumps(d).encode())
good_events = st.builds(
    lambda kind, card: json.dumps({"type": kind, "boardId": "brd_a", "cardId": card}).encode(),
    st.sampled_from(["card.ready", "card.claimed"]),
    st.from_regex(r"card_[0-9]{1,4}", fullmatch=True),
)
relay_bodies = st.one_of(good_events, events, bodies)
deliveries = st.one_of(st.from_regex(r"dlv_[0-9]{1,6}", fullmatch=True), latin1)


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_the_relay_never_answers_500_and_counts_every_answer(signed, stocked, logged):  # noqa: F811
    client = Client(raise_request_exception=True)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {TEST_OPERATOR_TOKEN}")
    answers = []

    @hypothesis_settings(FUZZ, max_examples=150)
    @given(
        timestamps,
        latin1,
        deliveries,
        relay_bodies,
        st.sampled_from(CONTENT_TYPES),
        sending,
        st.sampled_from(["application/json", "text/html", "application/yaml", "*/*"]),
    )
    def one_delivery(timestamp, signature, delivery, body, content_type, how, accept):
        now = int(time.time())
        timestamp = {"now": str(now), "stale": str(now - 301)}.get(timestamp, timestamp)
        if signed:
            signature = sign(timestamp, body)
        response = send(
            client,
            "POST",
            "/v1/relay/events",
            body,
            content_type,
            how,
            HTTP_X_TREATY_TIMESTAMP=timestamp,
            HTTP_X_TREATY_SIGNATURE=signature,
            HTTP_X_TREATY_DELIVERY=delivery,
            HTTP_ACCEPT=accept,
        )
        assert response.status_code != 401 or response.content  # the relay says why
        assert_the_rule(response, "POST")
        answers.append(response.status_code)

    def counted() -> float:
        return Scrape(api).value("superdispatch_relay_deliveries_total")

    before = counted()
    one_delivery()
    assert counted() - before == len(answers)
    assert errors(logged) == []
    if signed:  # the signed run reached past the signature, to events taken and refused
        assert {202, 400} <= set(answers), sorted(set(answers))
