"""The admin's roles: Django groups `viewer`, `operator` and `admin`, made by a migration.

Every page, action and change of the admin checks its permission: for every model page the
admin has, a viewer reads only its own (decisions, boards, suggestions, models) and changes
nothing (a POST is a 403), an operator also opts in and out, dismisses and redelivers, and
the rest (tokens, the audit trail, users, schedules) is an admin's.
"""

from __future__ import annotations

import io

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from access import actions as access_actions, roles
from access.audit import SERVICE
from access.models import ApiToken, AuditEntry
from learning.models import LearnedModel
from placement import formulas
from records.console.admin import formula_action_name
from records.models import Board, Decision, Experiment, LoopState, OutboxEvent, Suggestion
from tests.conftest import T0
from tests.support.admin_pages import change_url
from tests.support.factories import dead_event, make_decision, make_suggestion
from tests.support.learning_factories import stored_model
from tests.support.routes import finished_experiment

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

# What each role reads and changes in the admin, by model; any other model is an admin's.
READS = {Board, Decision, Suggestion, LoopState, LearnedModel, Experiment}
OPERATES = {Board, Suggestion, OutboxEvent, Experiment}
# The actions each role is offered, by model.
ACTIONS = {
    Board: {
        "opt_in",
        "opt_out",
        "deployment_formula",
        *(formula_action_name(arm) for arm in (*formulas.recorded_names(), "pull")),
    },
    Suggestion: {"dismiss"},
    OutboxEvent: {"redeliver"},
    Experiment: {"stop"},
}


def signed_in(role: str) -> Client:
    call_command(
        "create_operator",
        "--username",
        role,
        "--password",
        "pw-for-tests-1",
        "--role",
        role,
        stdout=io.StringIO(),
    )
    client = Client()
    client.force_login(get_user_model().objects.get(username=role))
    return client


@pytest.fixture
def rows():
    """A row of each of SuperDispatch's own models that the admin shows."""
    board = Board.objects.create(board_id="brd_a", enabled=True, created_at=T0, updated_at=T0)
    token, _ = access_actions.do_create_token("ci", ["read"], by=SERVICE, now=T0)
    made = {
        Board: board,
        Decision: make_decision(),
        Suggestion: make_suggestion(),
        LoopState: LoopState.objects.create(key="loop"),
        OutboxEvent: dead_event(),
        LearnedModel: stored_model(),
        Experiment: finished_experiment(),
        ApiToken: token,
        AuditEntry: AuditEntry.objects.filter(action="token.create").get(),
    }
    ours = {m for m in admin.site._registry if m._meta.app_label in ("records", "learning", "access")}
    assert ours == set(made), "a model page of ours without a row in this table"
    return made


def test_the_migration_made_the_three_groups_with_their_permissions():
    groups = {
        g.name: {f"{p.content_type.app_label}.{p.codename}" for p in g.permissions.all()}
        for g in Group.objects.prefetch_related("permissions__content_type")
    }
    assert groups["viewer"] == set(roles.READS)
    assert groups["operator"] == set(roles.READS) | set(roles.OPERATES)
    assert {
        "access.view_auditentry",
        "access.add_apitoken",
        "auth.change_user",
        "records.change_board",
    } <= groups["admin"]


@pytest.mark.parametrize("model", list(admin.site._registry), ids=lambda m: m._meta.label)
def test_every_model_page_answers_each_role_as_its_permissions_say(rows, model):
    clients = {role: signed_in(role) for role in roles.ROLES}
    meta = model._meta
    listing = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    adding = reverse(f"admin:{meta.app_label}_{meta.model_name}_add")
    for role, client in clients.items():
        reads = role == "admin" or model in READS or (role == "operator" and model in OPERATES)
        assert client.get(listing).status_code == (200 if reads else 403), (role, listing)
        if role != "admin":
            assert client.get(adding).status_code == 403, (role, adding)
        offered = set(admin.site._registry[model].get_actions(_request(client, role)))
        if role == "viewer":
            assert offered == set(), (role, model)
        elif role == "operator":
            assert offered == ACTIONS.get(model, set()), (role, model)
        names = [n for _, n, _ in admin.site._registry[model]._get_base_actions()]
        for name in names:
            if name in offered:
                continue
            refused = client.post(listing, {"action": name, "index": "0", "_selected_action": ["x"]})
            assert refused.status_code == 403, (role, model, name)


def _request(client: Client, role: str):
    request = client.get("/admin/").wsgi_request
    request.user = get_user_model().objects.get(username=role)
    return request


@pytest.mark.parametrize(
    "model",
    [Board, Decision, Suggestion, LoopState, OutboxEvent, LearnedModel, ApiToken, AuditEntry],
    ids=lambda m: m._meta.label,
)
def test_every_change_view_refuses_a_viewer_and_lets_an_operator_change_what_it_may(rows, model):
    row = rows[model]
    viewer, operator = signed_in("viewer"), signed_in("operator")
    url = change_url(row)
    assert viewer.get(url).status_code == (200 if model in READS else 403)
    assert viewer.post(url, {}).status_code == 403
    answer = operator.post(url, {})
    if model in OPERATES:
        assert answer.status_code == 302, (model, answer.status_code)  # saved: nothing to edit
    else:
        assert answer.status_code == 403, model


def test_an_operator_opts_in_and_out_and_a_viewer_is_refused_and_changes_nothing(rows):
    viewer, operator = signed_in("viewer"), signed_in("operator")
    post = {"action": "opt_out", "index": "0", "_selected_action": ["brd_a"]}
    assert viewer.post("/admin/records/board/", post).status_code == 403
    assert Board.objects.get().enabled
    assert operator.post("/admin/records/board/", post).status_code == 302
    assert not Board.objects.get().enabled
    listing = viewer.get("/admin/records/board/").content.decode()
    assert 'value="opt_out"' not in listing and 'name="action"' not in listing
    assert 'value="opt_out"' in operator.get("/admin/records/board/").content.decode()


def test_every_role_reads_the_dashboard_and_agent_pages_and_no_role_none(rows):
    for role in roles.ROLES:
        client = signed_in(role)
        assert client.get("/admin/dashboard/").status_code == 200, role
        assert client.get("/admin/agents/agt_ada/").status_code == 200, role
        assert 'href="/admin/dashboard/"' in client.get("/admin/").content.decode(), role
    nobody = get_user_model().objects.create_user("staff-only", password="pw-for-tests-1", is_staff=True)
    client = Client()
    client.force_login(nobody)
    assert client.get("/admin/dashboard/").status_code == 403
    assert client.get("/admin/agents/agt_ada/").status_code == 403
    assert 'href="/admin/dashboard/"' not in client.get("/admin/").content.decode()


def test_tokens_are_made_in_the_admin_with_the_secret_shown_once_and_revoked(rows):
    boss = signed_in("admin")
    form = boss.get("/admin/access/apitoken/add/")
    assert form.status_code == 200 and 'name="scopes"' in form.content.decode()
    made = boss.post(
        "/admin/access/apitoken/add/",
        {"name": "ci-writer", "scopes": ["read", "boards"], "expires_days": "30"},
    )
    assert made.status_code == 200 and "no-store" in made["Cache-Control"]
    secret = made.context["secret"]
    assert secret.startswith("sdt_") and secret in made.content.decode()
    token = ApiToken.objects.get(name="ci-writer")
    assert token.scopes == "read,boards" and token.expires_at > timezone.now()
    assert secret not in boss.get(change_url(token)).content.decode()  # never again
    assert Client().get("/v1/boards", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 200
    again = boss.post("/admin/access/apitoken/add/", {"name": "ci-writer", "scopes": ["read"]})
    assert "in use; revoke it first" in again.content.decode()
    boss.post("/admin/access/apitoken/", {"action": "revoke", "index": "0", "_selected_action": [token.pk]})
    assert Client().get("/v1/boards", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 401
    listing = boss.get("/admin/access/apitoken/").content.decode()
    assert "revoked" in listing
    assert [(e.actor, e.via) for e in AuditEntry.objects.filter(target="ci-writer")] == [
        ("admin", "admin"),
        ("admin", "admin"),
    ]
    operator = signed_in("operator")
    assert (
        operator.post("/admin/access/apitoken/add/", {"name": "mine", "scopes": ["admin"]}).status_code == 403
    )


def test_create_operator_takes_a_role_and_defaults_to_admin():
    call_command("create_operator", "--username", "op", "--password", "pw-for-tests-1", stdout=io.StringIO())
    call_command(
        "create_operator",
        "--username",
        "vi",
        "--password",
        "pw-for-tests-1",
        "--role",
        "viewer",
        stdout=io.StringIO(),
    )
    op, vi = (get_user_model().objects.get(username=name) for name in ("op", "vi"))
    assert op.is_superuser and [g.name for g in op.groups.all()] == ["admin"]
    assert vi.is_staff and not vi.is_superuser and [g.name for g in vi.groups.all()] == ["viewer"]
    with pytest.raises(Exception):
        call_command("create_operator", "--username", "x", "--role", "root", stdout=io.StringIO())


def test_the_browsable_api_follows_the_role_of_the_person_signed_in(rows):
    viewer, operator = signed_in("viewer"), signed_in("operator")
    assert viewer.get("/v1/boards").status_code == 200
    assert viewer.get("/v1/audit").status_code == 403
    refused = viewer.delete("/v1/boards/brd_a")
    assert refused.status_code == 403 and refused.json()["error"]["scope"] == "boards"
    assert operator.delete("/v1/boards/brd_a").status_code == 200
    assert operator.get("/v1/audit").status_code == 403
    assert signed_in("admin").get("/v1/audit").status_code == 200
