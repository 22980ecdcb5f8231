"""One rule for bodies: a route that takes none refuses any, `{}` included, with a 400
(`unexpected-body`) before it reads its query or writes anything; only the routes that read one
(`POST /v1/models/train`) take a body."""

from __future__ import annotations

import re

import pytest
from django.urls import URLPattern, get_resolver

from access.models import AuditEntry
from common.views import CredentialFirst
from learning import actions as learning_actions
from records.models import Board, Suggestion
from records.store.actions.boards import do_opt_in
from tests.support.factories import T0, make_decision, make_suggestion
from tests.support.learning_factories import trainable
from tests.support.routes import finished_experiment

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

METHODS = ("get", "post", "put", "delete", "patch")


def _routes_without_a_body() -> list[tuple[str, str]]:
    """(path pattern, method) for every method of every operator route that takes no body."""
    found = []
    for pattern in get_resolver().url_patterns:
        view = getattr(getattr(pattern, "callback", None), "cls", None)
        if not isinstance(pattern, URLPattern) or not (view and issubclass(view, CredentialFirst)):
            continue
        if getattr(view, "takes_body", False):
            continue
        found += [(str(pattern.pattern), m) for m in METHODS if hasattr(view, m)]
    return found


ROUTES = _routes_without_a_body()


@pytest.fixture
def ids():
    do_opt_in("brd_a", T0)
    decision = make_decision(board="brd_a", chosen="agt_ada", candidates=[{"agent": "agt_ada"}])
    suggestion = make_suggestion()
    trainable(40)
    model = learning_actions.do_train(None, 1, now=T0)
    return {
        "board_id": "brd_a",
        "decision_id": decision.id,
        "suggestion_id": suggestion.id,
        "model_id": model.id,
        "experiment_id": finished_experiment().id,
    }


def test_the_rule_covers_the_writes_that_take_no_body():
    assert {
        ("v1/boards/<str:board_id>", "put"),
        ("v1/boards/<str:board_id>", "delete"),
        ("v1/suggestions/<str:suggestion_id>/dismiss", "post"),
        ("v1/boards", "get"),
        ("metrics", "get"),
    } <= set(ROUTES)
    assert not any(route == "v1/models/train" for route, _ in ROUTES)


@pytest.mark.parametrize("body", [b"{}", b'{"reason": "duplicate"}', b" ", b"x"])
@pytest.mark.parametrize("route,method", ROUTES)
def test_a_route_that_takes_no_body_refuses_one(api, ids, route, method, body):
    path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: ids[m[1]], route)
    entries = AuditEntry.objects.count()
    response = api.generic(method.upper(), path, body, content_type="application/json")
    assert response.status_code == 400, (path, response.content)
    assert response.json() == {
        "error": {"code": "unexpected-body", "message": f"{method.upper()} on this route takes no body"}
    }
    assert AuditEntry.objects.count() == entries


def test_a_dismissal_with_a_body_dismisses_nothing(api, ids):
    path = f"/v1/suggestions/{ids['suggestion_id']}/dismiss"
    assert api.post(path, {"reason": "seen it"}, content_type="application/json").status_code == 400
    assert Suggestion.objects.get().dismissed_at is None
    assert api.generic("POST", path).status_code == 200  # and without one, it is dismissed
    assert Suggestion.objects.get().dismissed_at is not None


def test_an_opt_out_with_a_body_leaves_the_board_in(api, ids):
    assert api.delete("/v1/boards/brd_a", b"{}", content_type="application/json").status_code == 400
    assert Board.objects.get().enabled


def test_training_still_takes_its_body(api):
    trainable(40)
    response = api.post("/v1/models/train", {"seed": 3}, content_type="application/json")
    assert response.status_code == 201 and response.json()["model"]["seed"] == 3
