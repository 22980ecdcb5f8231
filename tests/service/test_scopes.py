"""Named tokens and their scopes on every route: each route and method, read from the URL conf,
against a token of each scope: the bare 401 without one, a 403 naming the scope without it,
2xx with it. A route added without a declared scope fails here.

The scopes are the product's: `read` every GET but the audit trail, `boards` opting in and
out, `suggestions` dismissing, `train` training, `admin` everything.
"""

from __future__ import annotations

import hashlib
import io
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import get_resolver

from access import actions, auth as access_auth
from access.audit import SERVICE
from access.models import ApiToken, AuditEntry
from common.scopes import ADMIN, BOARDS, READ, SCOPES, SUGGESTIONS, TRAIN, needed_scope
from common.views import CredentialFirst, NoRoute
from records.models import Board, Suggestion
from superdispatch.settings_test import TEST_OPERATOR_TOKEN
from tests.conftest import T0
from tests.service.test_auth import assert_bare_401
from tests.support.routes import rows_behind_every_route

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def operator_routes():
    """(route, view, method) for each method each operator view answers, from the URL conf."""
    for pattern in get_resolver().url_patterns:
        view = getattr(pattern.callback, "cls", None)
        if view is None or not issubclass(view, CredentialFirst) or view is NoRoute:
            continue
        for method in METHODS:
            if hasattr(view, method.lower()):
                yield str(pattern.pattern), view, method


ROUTES = list(operator_routes())


def the_products_scope(route: str, method: str) -> str:
    """What the scopes say each route needs; a write not listed here has no rule yet."""
    if method == "GET":
        return ADMIN if route == "v1/audit" else READ
    return {
        ("v1/boards/<str:board_id>", "PUT"): BOARDS,
        ("v1/boards/<str:board_id>", "DELETE"): BOARDS,
        ("v1/suggestions/<str:suggestion_id>/dismiss", "POST"): SUGGESTIONS,
        ("v1/models/train", "POST"): TRAIN,
        ("v1/experiments", "POST"): BOARDS,
    }[(route, method)]


def test_every_route_declares_the_scope_of_each_method_it_answers():
    assert len(ROUTES) >= 18  # the routes of docs/api.md's table, /metrics, the schema and docs
    undeclared = [f"{method} {route}" for route, view, method in ROUTES if method not in view.scopes]
    assert undeclared == []
    for route, view, method in ROUTES:
        assert view.scopes[method] == the_products_scope(route, method), (method, route)


def test_a_method_answered_but_not_declared_is_closed_but_to_admin():
    class Forgot(CredentialFirst):
        scopes = {"GET": READ}

        def get(self, request): ...

        def post(self, request): ...

    assert needed_scope(Forgot(), "POST") == ADMIN
    assert needed_scope(Forgot(), "HEAD") == READ
    assert needed_scope(Forgot(), "PUT") is None  # not answered: the 405 says so


@pytest.fixture
def store():
    """A row behind every id a route takes, rows to train on, and a token of each scope."""
    rows = rows_behind_every_route()
    ids = {
        "board_id": rows["board"],
        "decision_id": rows["decision"],
        "suggestion_id": rows["suggestion"],
        "model_id": rows["model"],
        "experiment_id": rows["experiment"],
    }
    secrets = {
        scope: actions.do_create_token(f"only-{scope}", [scope], by=SERVICE, now=T0)[1] for scope in SCOPES
    }
    return ids, secrets


def _path(route: str, ids: dict[str, str]) -> str:
    for name, value in ids.items():
        route = route.replace(f"<str:{name}>", value)
    assert "<" not in route, route
    return "/" + route


def _call(client, method: str, path: str, token: str | None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    answer = client.generic(method, path, **headers)
    if answer.streaming:
        # A stream (the dataset) holds its place until it is read or closed, as a server closes
        # every answer it sends; the test client leaves that to the reader, so it is read here.
        b"".join(answer.streaming_content)
    return answer


NEEDS_A_BODY = {("v1/experiments", "POST")}  # its answer with a body: tests/service/test_experiments.py


def _let_in(answer, route: str, method: str) -> bool:
    """Past the scope check: answered, or, for a write that needs a body, a 400 naming a field."""
    if (route, method) in NEEDS_A_BODY:
        return answer.status_code == 400 and answer.json()["error"]["code"] == "bad-field"
    return 200 <= answer.status_code < 300


@pytest.mark.parametrize("route,view,method", ROUTES, ids=[f"{m} {r}" for r, _, m in ROUTES])
def test_each_route_refuses_each_scope_but_its_own_and_admin(client, store, route, view, method):
    ids, secrets = store
    path = _path(route, ids)
    needed = view.scopes[method]
    assert_bare_401(_call(client, method, path, None))
    assert_bare_401(_call(client, method, path, "sdt_" + "x" * 32))  # no such token
    for scope, secret in secrets.items():
        answer = _call(client, method, path, secret)
        if scope in (needed, ADMIN):
            assert _let_in(answer, route, method), (scope, answer.content[:300])
        else:
            assert answer.status_code == 403, (scope, answer.status_code)
            assert answer.json() == {
                "error": {
                    "code": "forbidden",
                    "message": f"{method} {path} needs the scope {needed}",
                    "scope": needed,
                }
            }
    # The configured digest's token keeps every scope, as it always had every route.
    assert _let_in(_call(client, method, path, TEST_OPERATOR_TOKEN), route, method)


def test_a_read_token_reads_everything_but_the_audit_trail_and_changes_nothing(client, store):
    ids, secrets = store
    before = (Board.objects.get().enabled, Suggestion.objects.get().dismissed_at, AuditEntry.objects.count())
    for route, view, method in ROUTES:
        answer = _call(client, method, _path(route, ids), secrets[READ])
        allowed = method == "GET" and route != "v1/audit"
        assert (answer.status_code < 300) == allowed, (method, route, answer.status_code)
    assert (
        Board.objects.get().enabled,
        Suggestion.objects.get().dismissed_at,
        AuditEntry.objects.count(),
    ) == before


class Unreadable(io.RawIOBase):
    """A request body that cannot be read: reading it is an error."""

    def read(self, *args):
        raise AssertionError("the body was read")

    readline = readinto = read


def test_the_scope_is_checked_before_the_body_is_read(client, store, django_assert_num_queries):
    _, secrets = store
    for path, method in (("/v1/models/train", "POST"), ("/v1/boards/brd_a", "PUT")):
        answer = client.generic(
            method,
            path,
            HTTP_AUTHORIZATION=f"Bearer {secrets[READ]}",
            CONTENT_TYPE="application/json",
            CONTENT_LENGTH="64",
            **{"wsgi.input": Unreadable()},
        )
        assert answer.status_code == 403, answer.content
        assert answer.json()["error"]["scope"] in (TRAIN, BOARDS)
    # and a body that would not parse is not parsed: the scope answers, not bad-json
    refused = client.post(
        "/v1/models/train",
        data=b"{not json",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secrets[BOARDS]}",
    )
    assert refused.status_code == 403 and refused.json()["error"]["scope"] == TRAIN


def test_head_follows_get_options_needs_no_scope_and_a_method_not_answered_is_405(client, store):
    _, secrets = store
    train_only = {"HTTP_AUTHORIZATION": f"Bearer {secrets[TRAIN]}"}
    assert client.head("/v1/boards", **train_only).status_code == 403
    assert client.options("/v1/models/train", **train_only).status_code == 200
    assert client.patch("/v1/boards", **train_only).status_code == 405
    assert client.get("/v1/nowhere", **train_only).json()["error"]["code"] == "not-found"


def test_a_revoked_token_is_refused_on_the_next_request(client, store):
    _, secrets = store
    token = {"HTTP_AUTHORIZATION": f"Bearer {secrets[READ]}"}
    assert client.get("/v1/boards", **token).status_code == 200
    call_command("tokens", "revoke", "only-read", stdout=io.StringIO())
    assert_bare_401(client.get("/v1/boards", **token))


def test_an_expired_token_is_refused_at_once(client, monkeypatch):
    _, secret = actions.do_create_token(
        "a-day", [READ], by=SERVICE, now=T0, expires_at=T0 + timedelta(days=1)
    )
    token = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    monkeypatch.setattr(access_auth, "clock", lambda: T0 + timedelta(hours=23, minutes=59))
    assert client.get("/v1/boards", **token).status_code == 200
    monkeypatch.setattr(access_auth, "clock", lambda: T0 + timedelta(days=1))
    assert_bare_401(client.get("/v1/boards", **token))


def test_a_token_keeps_only_the_digest_of_its_secret_and_its_use_to_the_minute(client, monkeypatch):
    out = io.StringIO()
    call_command("tokens", "create", "ci-reader", "--scope", "read", "--scope", "boards", stdout=out)
    last = out.getvalue().strip().splitlines()[-1]
    assert last.startswith("token=sdt_") and len(last) == len("token=") + 36
    secret = last.removeprefix("token=")
    row = ApiToken.objects.get(name="ci-reader")
    assert row.digest == hashlib.sha256(secret.encode()).hexdigest()
    stored = [str(v) for v in ApiToken.objects.values().get().values()]
    assert secret not in " ".join(stored)
    assert secret not in str(list(AuditEntry.objects.values()))
    token = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    monkeypatch.setattr(access_auth, "clock", lambda: T0)
    client.get("/v1/boards", **token)
    assert ApiToken.objects.get().last_used_at == T0
    monkeypatch.setattr(access_auth, "clock", lambda: T0 + timedelta(seconds=59))
    with CaptureQueriesContext(connection) as queries:
        client.get("/v1/boards", **token)
    assert not [q for q in queries if q["sql"].startswith("UPDATE")]  # not yet a minute
    monkeypatch.setattr(access_auth, "clock", lambda: T0 + timedelta(seconds=61))
    client.get("/v1/boards", **token)
    assert ApiToken.objects.get().last_used_at == T0 + timedelta(seconds=61)


def test_tokens_list_and_the_names_and_scopes_it_refuses():
    call_command("tokens", "create", "ci", "--scope", "read", "--expires-days", "30", stdout=io.StringIO())
    listed = io.StringIO()
    call_command("tokens", "list", stdout=listed)
    assert "ci" in listed.getvalue() and "read" in listed.getvalue()
    with pytest.raises(Exception, match="in use; revoke it first"):
        call_command("tokens", "create", "ci", "--scope", "read", stdout=io.StringIO())
    with pytest.raises(Exception, match="a token's name is"):
        call_command("tokens", "create", "no spaces", "--scope", "read", stdout=io.StringIO())
    with pytest.raises(Exception, match="expires-days"):
        call_command("tokens", "create", "x", "--scope", "read", "--expires-days", "0", stdout=io.StringIO())
    with pytest.raises(Exception, match="no live token named nobody"):
        call_command("tokens", "revoke", "nobody", stdout=io.StringIO())
    call_command("tokens", "revoke", "ci", stdout=io.StringIO())
    call_command("tokens", "create", "ci", "--scope", "read", stdout=io.StringIO())  # name free


def test_a_token_made_for_a_user_does_no_more_than_their_role(client):
    viewer = get_user_model().objects.create_user("vera", password="pw-for-tests-1", is_staff=True)
    viewer.groups.set([Group.objects.get(name="viewer")])
    Board.objects.create(board_id="brd_a", enabled=True, created_at=T0, updated_at=T0)
    _, secret = actions.do_create_token("vera-script", [READ, BOARDS], by=SERVICE, now=T0, user=viewer)
    token = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    assert client.get("/v1/boards", **token).status_code == 200
    assert client.delete("/v1/boards/brd_a", **token).status_code == 403  # not a viewer's
    viewer.is_active = False
    viewer.save()
    assert_bare_401(client.get("/v1/boards", **token))
    # A script's own login, an operator that never signs in to the admin, may opt out.
    script = get_user_model().objects.create_user("relabel-bot", is_staff=False)
    script.groups.set([Group.objects.get(name="operator")])
    _, secret = actions.do_create_token("relabel", [BOARDS], by=SERVICE, now=T0, user=script)
    assert client.delete("/v1/boards/brd_a", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 200


def test_the_audit_trail_is_paged_like_decisions_and_filtered(client, store):
    _, secrets = store
    admin = {"HTTP_AUTHORIZATION": f"Bearer {secrets[ADMIN]}"}
    for i in range(5):
        actions.do_record(
            SERVICE, "board.opt-in", f"brd_{i}", None, {"enabled": True}, T0 + timedelta(seconds=i)
        )
    newest = client.get("/v1/audit?action=board.opt-in&limit=2", **admin).json()["audit"]
    assert [e["target"] for e in newest] == ["brd_4", "brd_3"]
    assert set(newest[0]) == {
        "id",
        "at",
        "actor",
        "actorKind",
        "user",
        "via",
        "action",
        "target",
        "before",
        "after",
    }
    after_id = client.get(f"/v1/audit?action=board.opt-in&limit=2&before={newest[-1]['id']}", **admin).json()[
        "audit"
    ]
    assert [e["target"] for e in after_id] == ["brd_2", "brd_1"]
    by_time = client.get(f"/v1/audit?action=board.opt-in&before={newest[-1]['at']}", **admin)
    assert [e["target"] for e in by_time.json()["audit"]] == ["brd_2", "brd_1", "brd_0"]
    assert [e["target"] for e in client.get("/v1/audit?target=brd_0", **admin).json()["audit"]] == ["brd_0"]
    mine = client.get("/v1/audit?actor=superdispatch&action=token.create", **admin).json()
    assert {e["target"] for e in mine["audit"]} == {f"only-{s}" for s in SCOPES}
    for bad in ("limit=0", "before=aud_x", "before=yesterday", "colour=red", "actor=a%20b"):
        assert client.get(f"/v1/audit?{bad}", **admin).status_code == 400, bad


def test_paging_the_trail_by_id_misses_none_of_the_entries_written_at_one_time(client, store):
    _, secrets = store
    admin = {"HTTP_AUTHORIZATION": f"Bearer {secrets[ADMIN]}"}
    actions.do_record_many(
        SERVICE, "event.redeliver", [(f"evt_{i}", None, None) for i in range(7)], T0
    )  # one moment
    seen, before = [], ""
    while True:
        page = client.get(f"/v1/audit?action=event.redeliver&limit=3{before}", **admin).json()
        if not page["audit"]:
            break
        seen += [e["target"] for e in page["audit"]]
        before = f"&before={page['audit'][-1]['id']}"
    assert sorted(seen) == [f"evt_{i}" for i in range(7)] and len(set(seen)) == 7


API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
ACCESS_DOC = Path(__file__).resolve().parents[2] / "docs" / "access.md"


def _shape(path: str) -> str:
    """A path with its parameters blanked, as docs/api.md writes it (`:id`) or the URL conf
    (`<str:model_id>`)."""
    return re.sub(r":\w+|<str:\w+>", "{}", "/" + path.lstrip("/"))


def documented_scopes() -> dict[tuple[str, str], str]:
    """(method, path) -> scope, from docs/api.md's table of routes."""
    table = API_DOC.read_text().split("| Method | Path | Scope | What it does |", 1)[1]
    found = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        method, paths, scope = (cell.strip() for cell in line.strip("|").split("|")[:3])
        for path in re.findall(r"`(/[^`]*)`", paths):
            found[(method.strip("`"), _shape(path))] = scope.strip("`")
    return found


def test_the_api_page_lists_each_routes_scope_as_the_views_declare_it():
    listed = documented_scopes()
    declared = {(method, _shape(route)): view.scopes[method] for route, view, method in ROUTES}
    declared |= {("GET", "/healthz"): "none", ("POST", "/v1/relay/events"): "none"}
    assert listed == declared


def test_the_docs_say_what_each_scope_opens_as_the_scopes_declare_it():
    table = ACCESS_DOC.read_text().split("| Scope | What it opens |", 1)[1].splitlines()[2:]
    rows = [line.strip("|").split("|") for line in table[: len(SCOPES)]]
    assert {name.strip().strip("`"): grants.strip() for name, grants in rows} == {
        s.name: s.grants for s in SCOPES.values()
    }
