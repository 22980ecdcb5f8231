"""Opted-in boards, settings a test can change, and a way to read what a sync left open."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import pytest

from records.models import Board, Suggestion
from records.suggestions import sync
from tests.conftest import T0


@pytest.fixture(autouse=True)
def boards(db):
    for board_id in ("brd_a", "brd_b"):
        Board.objects.create(board_id=board_id, enabled=True, created_at=T0, updated_at=T0)


@pytest.fixture
def configure(settings):
    """Change SuperDispatch's settings for one test: configure(stall_minutes=10)."""

    def change(**values):
        settings.SUPERDISPATCH = dataclasses.replace(settings.SUPERDISPATCH, **values)

    return change


def synced(now: datetime) -> dict[str, Suggestion]:
    """Sync at `now`, then every open suggestion by kind (one board and stage in these tests)."""
    sync(now)
    return {s.kind: s for s in Suggestion.objects.filter(resolved_at__isnull=True, dismissed_at__isnull=True)}
