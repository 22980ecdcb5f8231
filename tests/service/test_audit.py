"""The audit trail: every write through the API, the admin or a command is an entry that says
who (a token's name, a user, a command's OS user), when, what, the target, and the values
before and after; the admin shows it and changes none of it; retention keeps it as long as
decisions."""

from __future__ import annotations

import io
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.test import Client

from access import actions as access_actions
from access.audit import SERVICE, Actor, os_user
from access.models import AuditEntry
from common.scopes import BOARDS, SUGGESTIONS, TRAIN
from placement import Rules
from records.models import Board
from records.store import retention
from records.store.actions.boards import do_opt_in, do_opt_out
from superdispatch.loop import windows
from superdispatch.settings_test import TEST_OPERATOR_TOKEN
from superdispatch.tasks import board_changed_task
from tests.conftest import T0
from tests.support.admin_pages import change_url
from tests.support.factories import dead_event, make_decision, make_suggestion
from tests.support.learning_factories import trainable

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def entries(action: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action).order_by("at", "id"))


def only(action: str) -> AuditEntry:
    found = entries(action)
    assert len(found) == 1, [(e.action, e.target, e.actor) for e in found]
    return found[0]


def test_api_writes_name_the_token_that_made_them(client):
    _, secret = access_actions.do_create_token("ops-script", [BOARDS, SUGGESTIONS, TRAIN], by=SERVICE, now=T0)
    token = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    suggestion = make_suggestion()
    trainable(40)
    assert client.put("/v1/boards/brd_a", **token).status_code == 200
    assert client.delete("/v1/boards/brd_a", **token).status_code == 200
    assert client.generic("POST", f"/v1/suggestions/{suggestion.id}/dismiss", **token).status_code == 200
    model_id = client.generic("POST", "/v1/models/train", **token).json()["model"]["id"]
    opt_in, opt_out = only("board.opt-in"), only("board.opt-out")
    assert (opt_in.actor, opt_in.actor_kind, opt_in.via, opt_in.target) == (
        "ops-script",
        "token",
        "api",
        "brd_a",
    )
    assert (opt_in.before, opt_in.after) == (None, {"enabled": True})
    assert (opt_out.before, opt_out.after) == ({"enabled": True}, {"enabled": False})
    dismissed = only("suggestion.dismiss")
    assert (dismissed.actor, dismissed.target, dismissed.before) == (
        "ops-script",
        suggestion.id,
        {"dismissedAt": None},
    )
    assert dismissed.after["dismissedAt"].startswith("20")
    trained = only("model.train")
    assert (trained.actor, trained.target, trained.after["version"]) == ("ops-script", model_id, 1)
    assert opt_in.at <= opt_out.at <= dismissed.at <= trained.at


def test_a_write_that_changes_nothing_is_not_an_entry(client):
    token = {"HTTP_AUTHORIZATION": f"Bearer {TEST_OPERATOR_TOKEN}"}
    suggestion = make_suggestion()
    client.put("/v1/boards/brd_a", **token)
    client.put("/v1/boards/brd_a", **token)  # already in
    client.generic("POST", f"/v1/suggestions/{suggestion.id}/dismiss", **token)
    client.generic("POST", f"/v1/suggestions/{suggestion.id}/dismiss", **token)  # already dismissed
    assert [(e.action, e.actor) for e in AuditEntry.objects.order_by("at", "id")] == [
        ("board.opt-in", "operator-token"),
        ("suggestion.dismiss", "operator-token"),
    ]


def test_the_browsable_api_names_the_person_signed_in(client):
    user = get_user_model().objects.create_user("olga", password="pw-for-tests-1", is_staff=True)
    user.groups.set([Group.objects.get(name="operator")])
    client.force_login(user)
    assert client.put("/v1/boards/brd_a").status_code == 200
    entry = only("board.opt-in")
    assert (entry.actor, entry.actor_kind, entry.via) == ("olga", "user", "api")


def test_admin_actions_name_the_user(staff):
    Board.objects.create(board_id="brd_a", enabled=False, created_at=T0, updated_at=T0)
    suggestion = make_suggestion()
    dead_event(id="evt_" + "a" * 24, attempts=12, last_error="http-500")
    staff.post("/admin/records/board/", {"action": "opt_in", "_selected_action": ["brd_a"]})
    staff.post("/admin/records/board/", {"action": "opt_out", "_selected_action": ["brd_a"]})
    staff.post("/admin/records/suggestion/", {"action": "dismiss", "_selected_action": [suggestion.id]})
    staff.post(
        "/admin/records/outboxevent/", {"action": "redeliver", "_selected_action": ["evt_" + "a" * 24]}
    )
    for action in ("board.opt-in", "board.opt-out", "suggestion.dismiss", "event.redeliver"):
        entry = only(action)
        assert (entry.actor, entry.actor_kind, entry.via) == ("op", "user", "admin"), action
    redelivered = only("event.redeliver")
    assert (redelivered.target, redelivered.before, redelivered.after) == (
        "evt_" + "a" * 24,
        {"state": "dead", "attempts": 12, "lastError": "http-500"},
        {"state": "pending", "attempts": 0, "lastError": ""},
    )


def test_commands_name_the_os_user_and_the_command():
    dead_event(id="evt_" + "b" * 24, attempts=3)
    call_command("events", "--redeliver", stdout=io.StringIO())
    call_command("tokens", "create", "ci", "--scope", "read", stdout=io.StringIO())
    call_command("tokens", "revoke", "ci", stdout=io.StringIO())
    trainable(40)
    call_command("train", stdout=io.StringIO(), stderr=io.StringIO())
    seen = {e.action: (e.actor, e.actor_kind, e.via) for e in AuditEntry.objects.all()}
    who = os_user()
    assert seen == {
        "event.redeliver": (who, "command", "manage.py events --redeliver"),
        "token.create": (who, "command", "manage.py tokens create"),
        "token.revoke": (who, "command", "manage.py tokens revoke"),
        "model.train": (who, "command", "manage.py train"),
    }
    made = only("token.create")
    assert (made.before, made.after["scopes"], made.after["expiresAt"]) == (None, ["read"], None)
    assert only("token.revoke").before == {"revokedAt": None}


def test_role_changes_are_entries_with_the_groups_before_and_after_and_no_password():
    out = io.StringIO()
    call_command(
        "create_operator", "--username", "vic", "--password", "pw-for-tests-1", "--role", "viewer", stdout=out
    )
    call_command(
        "create_operator",
        "--username",
        "vic",
        "--password",
        "pw-for-tests-2",
        "--role",
        "operator",
        stdout=out,
    )
    added, changed = only("user.add"), only("user.change")
    assert (added.target, added.after["groups"], added.after["is_superuser"]) == ("vic", ["viewer"], False)
    assert added.after["password"] == "(hidden)"
    assert changed.before == {"groups": ["viewer"], "password": "(hidden)"}
    assert changed.after == {"groups": ["operator"], "password": "(changed)"}
    assert changed.via == "manage.py create_operator"
    assert "pw-for-tests" not in str(list(AuditEntry.objects.values()))
    assert "md5$" not in str(list(AuditEntry.objects.values()))  # nor the password's hash


def test_a_role_changed_in_the_admin_is_an_entry_by_the_admin(staff):
    vic = get_user_model().objects.create_user("vic", password="pw-for-tests-1", is_staff=True)
    vic.groups.set([Group.objects.get(name="viewer")])
    page = staff.get(change_url(vic))
    form = page.context["adminform"].form
    data = {
        name: value
        for name, value in form.initial.items()
        if value is not None and name not in ("groups", "user_permissions", "password")
    }
    data.update(
        {
            "groups": [Group.objects.get(name="operator").pk],
            "is_staff": "on",
            "is_active": "on",
            "last_login_0": "",
            "last_login_1": "",
            "date_joined_0": "2026-11-13",
            "date_joined_1": "10:00:00",
        }
    )
    answer = staff.post(change_url(vic), data)
    assert answer.status_code == 302, answer.context["adminform"].form.errors
    entry = only("user.change")
    assert (entry.actor, entry.via, entry.target) == ("op", "admin", "vic")
    assert (entry.before["groups"], entry.after["groups"]) == (["viewer"], ["operator"])


@pytest.fixture
def window_of_45(monkeypatch):
    """The loop the board-change task uses: SuperPipeline accepts every window asked for."""
    pipeline = SimpleNamespace(set_placement_window=lambda board_id, seconds: seconds)
    loop = SimpleNamespace(
        cfg=SimpleNamespace(placement_window_seconds=45),
        rules=Rules(),
        clients=SimpleNamespace(superpipeline=pipeline),
        clock=lambda: T0,
    )
    monkeypatch.setattr("superdispatch.tasks.loop", lambda: loop)
    monkeypatch.setattr("superdispatch.tasks.look_at_board_task.delay", lambda *a: None)
    return loop


def test_the_placement_window_written_names_who_opted_the_board_in(window_of_45):
    do_opt_in("brd_a", T0, by=Actor("ops-script", "token", "api"))
    board_changed_task("brd_a")
    entry = only("board.window")
    assert (entry.actor, entry.target, entry.before, entry.after) == (
        "ops-script",
        "brd_a",
        {"windowSeconds": None},
        {"windowSeconds": 45},
    )
    windows.set_window(window_of_45, Board.objects.get(), T0)  # the same window: no change
    assert len(entries("board.window")) == 1


def test_one_task_for_several_changes_names_who_made_the_last(window_of_45):
    """Changes made while the first one's task waits queue nothing more; that task acts on
    them all, and the window it writes is the last change's."""
    do_opt_in("brd_a", T0, by=Actor("alice", "user", "admin"))
    board_changed_task("brd_a")
    do_opt_out("brd_a", T0 + timedelta(seconds=1), by=Actor("ci", "token", "api"))
    do_opt_in("brd_a", T0 + timedelta(seconds=2), by=Actor("bob", "user", "admin"))
    do_opt_out("brd_a", T0 + timedelta(seconds=3), by=Actor("ops", "token", "api"))
    board_changed_task("brd_a")  # the task the opt-out by ci queued
    assert sorted((e.actor, e.after["windowSeconds"]) for e in entries("board.window")) == [
        ("alice", 45),
        ("ops", 0),
    ]


def test_the_admin_browses_the_trail_and_can_change_or_delete_none_of_it(staff):
    Board.objects.create(board_id="brd_a", enabled=False, created_at=T0, updated_at=T0)
    do_opt_in("brd_a", T0, by=Actor("ci", "token", "api"))
    entry = only("board.opt-in")
    listing = staff.get("/admin/access/auditentry/?actor=ci&action=board.opt-in")
    assert listing.status_code == 200 and "brd_a" in listing.content.decode()
    assert staff.get("/admin/access/auditentry/?at__year=2026").status_code == 200
    page = staff.get(change_url(entry))
    assert page.status_code == 200 and "Save" not in page.content.decode()
    assert staff.post(change_url(entry), {"actor": "someone-else"}).status_code == 403
    delete = change_url(entry).replace("/change/", "/delete/")
    assert staff.post(delete, {"post": "yes"}).status_code == 403
    assert (
        staff.post(
            "/admin/access/auditentry/", {"action": "delete_selected", "_selected_action": [entry.id]}
        ).status_code
        == 403
    )
    assert staff.get("/admin/access/auditentry/add/").status_code == 403
    assert AuditEntry.objects.get(action="board.opt-in").actor == "ci"


def test_retention_keeps_the_trail_as_long_as_the_decisions():
    now = T0 + timedelta(days=100)
    kept_decision = make_decision(
        card="card_new", created_at=now - timedelta(days=89), outcome_status="claimed"
    )
    make_decision(card="card_old", created_at=now - timedelta(days=91), outcome_status="claimed")
    access_actions.do_record(SERVICE, "board.opt-in", "brd_old", None, None, now - timedelta(days=91))
    access_actions.do_record(SERVICE, "board.opt-in", "brd_kept", None, None, now - timedelta(days=89))
    summary = retention.prune(now, 90)
    assert summary.decisions == 1 and summary.audit == 1
    assert kept_decision.__class__.objects.filter(pk=kept_decision.pk).exists()
    assert [e.target for e in AuditEntry.objects.all()] == ["brd_kept"]


def test_any_admin_page_is_audited_a_group_made_changed_and_deleted(staff):
    """A write through any admin page (here Django's groups, a role's permissions) is an
    entry, not only the pages of SuperDispatch's own models."""
    view_board = Permission.objects.get(codename="view_board")
    assert staff.post("/admin/auth/group/add/", {"name": "auditors"}).status_code == 302
    group = Group.objects.get(name="auditors")
    assert (
        staff.post(change_url(group), {"name": "auditors", "permissions": [view_board.pk]}).status_code == 302
    )
    staff.post(change_url(group).replace("/change/", "/delete/"), {"post": "yes"})
    assert not Group.objects.filter(name="auditors").exists()
    added, changed, deleted = only("group.add"), only("group.change"), only("group.delete")
    assert (added.actor, added.via, added.after) == (
        "op",
        "admin",
        {"id": group.pk, "name": "auditors", "permissions": []},
    )
    assert (changed.before, changed.after) == ({"permissions": []}, {"permissions": [str(view_board)]})
    assert (deleted.before["name"], deleted.after) == ("auditors", None)


def test_a_session_without_the_scope_sees_no_write_form_and_may_not_post():
    user = get_user_model().objects.create_user("vera", password="pw-for-tests-1", is_staff=True)
    user.groups.set([Group.objects.get(name="viewer")])
    viewer = Client()
    viewer.force_login(user)
    suggestion = make_suggestion()
    page = viewer.get(f"/v1/suggestions/{suggestion.id}/dismiss", HTTP_ACCEPT="text/html")
    assert "post-generic-content-form" not in page.content.decode()
    refused = viewer.generic("POST", f"/v1/suggestions/{suggestion.id}/dismiss")
    assert refused.status_code == 403 and refused.json()["error"]["scope"] == SUGGESTIONS
    assert not AuditEntry.objects.exists()
