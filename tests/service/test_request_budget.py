"""A web request's budget on PostgreSQL: each statement it runs is cancelled past
SUPERDISPATCH_REQUEST_STATEMENT_SECONDS, the request answered 503 (`over-budget`) with nothing it
began kept, and its thread free for the next; connections outside requests carry no such bound."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from django.conf import settings
from django.db import connection, connections, transaction
from django.test import Client
from rest_framework.response import Response

from records.api import views
from records.models import Board
from superdispatch.settings_test import TEST_OPERATOR_TOKEN
from tests.support.factories import T0

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]

TOKEN = {"HTTP_AUTHORIZATION": f"Bearer {TEST_OPERATOR_TOKEN}"}


@pytest.fixture(autouse=True)
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("statement_timeout is PostgreSQL's; SQLite has none")


def _show() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return cursor.fetchone()[0]


@pytest.fixture
def budget(monkeypatch):
    monkeypatch.setattr(
        settings, "SUPERDISPATCH", dataclasses.replace(settings.SUPERDISPATCH, request_statement_seconds=1)
    )
    yield
    connection.close()  # the test's own connection leaves the budget behind with it


def test_a_statement_past_the_budget_is_a_503_and_keeps_nothing(budget, monkeypatch):
    def slow(self, request):
        Board.objects.create(board_id="brd_half", enabled=True, created_at=T0, updated_at=T0)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(30)")
        return Response({})

    monkeypatch.setattr(views.Boards, "get", transaction.atomic(slow))
    client = Client()
    answer = client.get("/v1/boards", **TOKEN)
    assert answer.status_code == 503 and answer["Retry-After"]
    assert answer.json()["error"]["code"] == "over-budget"
    assert not Board.objects.filter(board_id="brd_half").exists()
    monkeypatch.undo()
    assert client.get("/v1/boards", **TOKEN).status_code == 200  # the connection serves again


def test_requests_carry_the_budget_and_other_connections_do_not(budget, monkeypatch):
    monkeypatch.setattr(views.Boards, "get", lambda self, request: Response({"t": _show()}))
    shown = []

    def outside_a_request():
        try:
            shown.append(_show())  # as a Celery task or the loop opens its connection
        finally:
            connections.close_all()

    thread = threading.Thread(target=outside_a_request)
    thread.start()
    thread.join()
    assert shown == ["0"]
    assert Client().get("/v1/boards", **TOKEN).json() == {"t": "1s"}
