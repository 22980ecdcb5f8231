"""Operator authentication: DRF's authentication and permission, checked before anything is read.

A refusal is a bare 401 (no body, no WWW-Authenticate, no Allow) whatever else the request
carries; only /healthz and the relay's webhook take no token. Every /v1 route also takes a
signed-in staff session of the admin (the browsable API for people: HTML when the browser asks
for it, JSON otherwise, CSRF checked on writes); a session without staff opens nothing.
"""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import get_resolver
from rest_framework.permissions import IsAuthenticated
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from access.auth import NamedTokenAuthentication
from common import auth
from common.auth import OperatorTokenAuthentication, StaffSessionAuthentication, token_matches
from common.renderers import BrowsableAPI, JSONRenderer
from common.scopes import ScopeRequired
from common.views import CredentialFirst
from records.models import Board, LoopState
from superdispatch.settings_test import TEST_OPERATOR_TOKEN
from tests.support.factories import make_suggestion

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

TOKEN = f"Bearer {TEST_OPERATOR_TOKEN}"
REFUSED = [
    None,
    "Bearer wrong",
    "Basic " + TEST_OPERATOR_TOKEN,
    TEST_OPERATOR_TOKEN,
    "Bearer ",
    "Bearer" + TEST_OPERATOR_TOKEN,
]


def assert_bare_401(response) -> None:
    assert response.status_code == 401
    assert response.content == b""
    assert "WWW-Authenticate" not in response and "Allow" not in response
    assert response["Content-Type"] == "text/html; charset=utf-8"  # Django's bare answer


@pytest.mark.parametrize("header", REFUSED)
@pytest.mark.parametrize(
    "method,path",
    [
        ("get", "/v1/boards"),
        ("put", "/v1/boards/brd_x"),
        ("delete", "/v1/boards/brd_x"),
        ("get", "/v1/decisions"),
        ("get", "/v1/decisions/pld_" + "0" * 24),
        ("get", "/v1/suggestions"),
        ("post", "/v1/suggestions/sug_" + "0" * 24 + "/dismiss"),
        ("get", "/v1/dataset"),
        ("post", "/v1/models/train"),
        ("get", "/v1/models"),
        ("get", "/v1/schema"),
        ("get", "/v1/docs"),
        ("get", "/v1/nowhere"),
        ("get", "/v1/boards/"),
        ("get", "/v1/"),
        ("options", "/v1/boards"),
        ("head", "/v1/boards"),
        ("patch", "/v1/boards"),
    ],
)
def test_every_route_but_two_refuses_without_the_token_with_a_bare_401(client, header, method, path):
    kwargs = {"HTTP_AUTHORIZATION": header} if header else {}
    assert_bare_401(getattr(client, method)(path, **kwargs))
    assert not Board.objects.exists()


def test_nothing_is_read_before_the_check(client, django_assert_num_queries):
    with django_assert_num_queries(0):  # no database either
        assert_bare_401(client.get("/v1/decisions?limit=0&colour=red"))  # a query not read
        assert_bare_401(
            client.post(
                "/v1/models/train",
                data=b"{not json",  # a body not parsed
                content_type="application/json",
            )
        )
        assert_bare_401(client.get("/v1/boards", HTTP_ACCEPT="text/html"))  # nothing negotiated
        too_many = "&".join(f"p{i}=1" for i in range(1100))  # past Django's field limit
        assert_bare_401(client.get(f"/v1/boards?{too_many}"))


def test_the_same_requests_with_the_token_are_read_and_answered(api):
    assert api.get("/v1/decisions?limit=0").status_code == 400
    assert (
        api.post("/v1/models/train", data=b"{not json", content_type="application/json").json()["error"][
            "code"
        ]
        == "bad-json"
    )
    browsable = api.get("/v1/boards", HTTP_ACCEPT="text/html")  # asked for: the browsable API
    assert browsable.status_code == 200 and browsable["Content-Type"].startswith("text/html")
    assert api.get("/v1/boards", HTTP_ACCEPT="application/xml").json()["error"]["code"] == ("not-acceptable")
    assert api.get("/v1/boards", HTTP_ACCEPT="*/*").json() == {"boards": []}  # JSON by default
    assert api.get("/v1/nowhere").json() == {"error": {"code": "not-found", "message": "no such route"}}
    assert "Allow" not in api.get("/v1/nowhere")


@pytest.mark.parametrize(
    "header", [TOKEN, f"bearer {TEST_OPERATOR_TOKEN}", f"Bearer  {TEST_OPERATOR_TOKEN} "]
)
def test_the_operator_token_opens_the_api(client, header):
    assert client.get("/v1/boards", HTTP_AUTHORIZATION=header).json() == {"boards": []}


def test_health_and_the_relay_take_no_token(client):
    assert client.get("/healthz").json() == {"ok": True, "service": "superdispatch"}
    unsigned = client.post("/v1/relay/events", data=b"{}", content_type="application/json")
    assert unsigned.status_code == 401  # the relay's own refusal, which says why
    assert unsigned.json()["error"]["code"] == "stale-or-missing-timestamp"


def sign_in(is_staff: bool, role: str = "admin") -> Client:
    """A signed-in user; a staff one with a role of the admin (every scope: an admin's)."""
    user = get_user_model().objects.create_user("someone", password="pw-for-tests-1", is_staff=is_staff)
    user.groups.set([Group.objects.get(name=role)])
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("path", ["/v1/docs", "/v1/schema"])
def test_a_staff_session_opens_the_docs_and_the_schema_even_beside_a_wrong_token(path):
    staff = sign_in(is_staff=True)
    assert staff.get(path).status_code == 200
    assert staff.get(path, HTTP_AUTHORIZATION="Bearer wrong").status_code == 200


@pytest.mark.parametrize(
    "path", ["/v1/boards", "/v1/decisions", "/v1/suggestions", "/v1/models", "/v1/boards/brd_x"]
)
def test_a_staff_session_browses_every_route_in_html_and_reads_json_otherwise(path):
    staff = sign_in(is_staff=True)
    page = staff.get(path, HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")  # a browser
    assert page["Content-Type"].startswith("text/html")
    assert b"SuperDispatch API</title>" in page.content and b'class="response-info"' in page.content
    assert staff.get(path)["Content-Type"] == "application/json"  # no text/html asked: JSON
    # Beside a wrong token the session still answers: the token is tried first, then it.
    assert staff.get(path, HTTP_AUTHORIZATION="Bearer wrong").status_code in (200, 404)


def test_a_staff_session_reads_an_unknown_route_as_json_404_and_the_dataset_as_rows():
    staff = sign_in(is_staff=True)
    assert staff.get("/v1/nowhere").json()["error"]["code"] == "not-found"
    assert staff.get("/v1/dataset", HTTP_ACCEPT="text/html")["Content-Type"] == ("application/x-ndjson")


@pytest.mark.parametrize(
    "path", ["/v1/docs", "/v1/schema", "/v1/boards", "/v1/decisions", "/v1/dataset", "/v1/nowhere"]
)
def test_a_session_without_staff_opens_nothing(path):
    signed_in = sign_in(is_staff=False)
    assert_bare_401(signed_in.get(path))
    assert_bare_401(signed_in.get(path, HTTP_ACCEPT="text/html"))


def test_a_staff_session_writes_only_with_its_csrf_token():
    suggestion = make_suggestion()
    user = get_user_model().objects.create_user("someone", password="pw-for-tests-1", is_staff=True)
    user.groups.set([Group.objects.get(name="operator")])  # one that may dismiss
    staff = Client(enforce_csrf_checks=True)  # as a browser is checked
    staff.force_login(user)
    url = f"/v1/suggestions/{suggestion.id}/dismiss"
    refused = staff.generic("POST", url, content_type="application/json")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert "CSRF" in refused.json()["error"]["message"]
    suggestion.refresh_from_db()
    assert suggestion.dismissed_at is None  # nothing written

    page = staff.get(url.removesuffix("/dismiss"), HTTP_ACCEPT="text/html")  # sets the cookie
    token = page.cookies["csrftoken"].value
    done = staff.generic("POST", url, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert done.status_code == 200 and done.json()["suggestion"]["dismissedAt"]


def test_scripts_write_with_the_token_and_no_csrf_token(client):
    suggestion = make_suggestion()
    strict = Client(enforce_csrf_checks=True)
    done = strict.generic("POST", f"/v1/suggestions/{suggestion.id}/dismiss", HTTP_AUTHORIZATION=TOKEN)
    assert done.status_code == 200 and done["Content-Type"] == "application/json"


def test_the_token_then_a_staff_session_and_the_permission_are_the_rest_framework_defaults():
    assert api_settings.DEFAULT_AUTHENTICATION_CLASSES == [
        OperatorTokenAuthentication,
        NamedTokenAuthentication,
        StaffSessionAuthentication,
    ]
    assert api_settings.DEFAULT_PERMISSION_CLASSES == [IsAuthenticated, ScopeRequired]
    assert api_settings.DEFAULT_RENDERER_CLASSES == [JSONRenderer, BrowsableAPI]


def _v1_views():
    for pattern in get_resolver().url_patterns:
        view = getattr(pattern.callback, "cls", None)
        if str(pattern.pattern).lstrip("^").startswith("v1") and view is not None:
            yield str(pattern.pattern), view


def test_every_v1_view_but_the_relay_checks_the_credential_first():
    views = dict(_v1_views())
    assert "v1/relay/events" in views and "^v1/" in views  # the catch-all is last
    assert list(views)[-1] == "^v1/"
    for route, view in views.items():
        assert issubclass(view, APIView), route
        if route == "v1/relay/events":
            assert view.authentication_classes == [] and not issubclass(view, CredentialFirst)
            continue
        assert issubclass(view, CredentialFirst), route
        assert IsAuthenticated in view.permission_classes, route
        assert ScopeRequired in view.permission_classes, route


def test_the_digest_is_compared_in_constant_time_even_when_the_scheme_is_wrong(monkeypatch):
    compared = []
    real = auth.hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    digest = auth.hashlib.sha256(TEST_OPERATOR_TOKEN.encode()).hexdigest()
    assert token_matches(f"Basic {TEST_OPERATOR_TOKEN}", (digest,)) is False
    assert token_matches(f"Bearer {TEST_OPERATOR_TOKEN}", (digest,)) is True
    assert compared == [(digest, digest), (digest, digest)]


def test_a_refused_call_leaves_the_loop_state_alone(client):
    client.put("/v1/boards/brd_x")
    client.post("/v1/models/train", data=b"{}", content_type="application/json")
    assert not LoopState.objects.exists() and not Board.objects.exists()
