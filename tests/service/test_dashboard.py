"""The admin's dashboard: what the loop did over a range, every figure counted in the database."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone as dj_timezone

from records.console import pages
from records.models import Board, LoopState, Suggestion
from tests.conftest import T0, at
from tests.support.factories import make_decision

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


@pytest.fixture
def now(monkeypatch):
    """The pages read the clock two hours after T0."""
    moment = at(7200)
    monkeypatch.setattr(pages, "clock", lambda: moment)
    return moment


def _held(
    board, card, agent, created, claimed_after=None, status="claimed", by=None, tier=("winner", 1), ready=None
):
    return make_decision(
        board=board,
        card=card,
        chosen=agent,
        tier=tier,
        created_at=created,
        ready_at=ready or created,
        reserved_until=created + timedelta(seconds=60),
        outcome_status=status,
        outcome_by=by or (agent if status == "claimed" else None),
        outcome_at=created + timedelta(seconds=claimed_after) if claimed_after is not None else None,
        candidates=[{"agent": agent, "total": 2}, {"agent": "agt_zed", "total": 1}],
    )


def _a_day(now):
    _held(
        "brd_a",
        "card_1",
        "agt_ada",
        now - timedelta(minutes=30),
        claimed_after=8,
        ready=now - timedelta(minutes=31),
    )
    _held("brd_a", "card_2", "agt_ada", now - timedelta(minutes=40), claimed_after=45)
    _held(
        "brd_a",
        "card_3",
        "agt_bob",
        now - timedelta(minutes=50),
        claimed_after=90,
        status="claimed-by-other",
        by="agt_zed",
    )
    _held("brd_b", "card_4", "agt_bob", now - timedelta(hours=3), claimed_after=None, status="expired")
    _held("brd_b", "card_5", "agt_cyd", now - timedelta(hours=5), claimed_after=20, tier=("runner-up", 2))
    make_decision(board="brd_b", card="card_6", reason="one-candidate", created_at=now - timedelta(hours=6))
    make_decision(board="brd_a", card="card_7", chosen="agt_old", created_at=now - timedelta(days=3))


def test_the_dashboard_counts_a_day(staff, now):
    _a_day(now)
    Board.objects.create(board_id="brd_a", enabled=True, created_at=T0, updated_at=T0)
    Board.objects.create(
        board_id="brd_c", enabled=True, created_at=T0, updated_at=T0, last_read_error="http-503"
    )
    LoopState.objects.create(failed_sweeps=2, last_sweep_at=now)
    Suggestion.objects.create(
        kind="add-station", board_id="brd_b", stage_key="review", first_seen_at=T0, last_seen_at=T0
    )
    response = staff.get("/admin/dashboard/", {"range": "day"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "6 decisions on 2 boards" in page  # the one three days old is out of range
    assert "<svg" in page and "decisions over time by tier" in page
    helping = page[page.index('id="sd-helping"') :]
    # brd_a: two claims under the hold, one by pull; brd_b: one held claim, one left to pull.
    assert (
        '<td>brd_a</td><td class="sd-num">2</td><td class="sd-num">1</td>'
        '<td class="sd-num">67%</td><td class="sd-num">0</td>'
    ) in helping
    assert (
        '<td>brd_b</td><td class="sd-num">1</td><td class="sd-num">0</td>'
        '<td class="sd-num">100%</td><td class="sd-num">1</td>'
    ) in helping
    # Ready to claim on brd_a, held: (68 s + 45 s) / 2; pulled 90 s.
    assert '<td class="sd-num">56 s</td><td class="sd-num">90 s</td>' in helping
    assert "<strong>winner</strong>: 2 claims under the hold, 26 s on average" in page
    assert "<strong>runner-up</strong>: 1 claim under the hold, 20 s on average" in page
    no_shows = page[page.index('id="sd-no-shows"') :]
    assert 'href="/admin/agents/agt_bob/">agt_bob</a></td><td class="sd-num">2</td>' in no_shows
    assert "http-503" in page and "2 sweeps in a row read no board: waiting 4× the interval" in page
    assert "1 open</a>: add-station 1" in page
    assert "nobody: one-candidate" in page


def test_the_hour_leaves_out_what_the_day_has(staff, now):
    _a_day(now)
    page = staff.get("/admin/dashboard/", {"range": "hour"}).content.decode()
    assert "3 decisions on 1 board" in page
    week = staff.get("/admin/dashboard/", {"range": "week"}).content.decode()
    assert "7 decisions on 2 boards" in week


def _bars(page: str) -> set[str]:
    """The x of each bar of the chart over time."""
    chart = page[page.index('aria-label="decisions over time by tier"') :]
    return set(re.findall(r'<rect x="([0-9.]+)"', chart[: chart.index("</svg>")]))


def test_a_young_store_s_day_is_drawn_from_its_first_decision_at_finer_bars(staff, now):
    for minutes in (25, 15, 5):
        _held("brd_a", f"card_{minutes}", "agt_ada", now - timedelta(minutes=minutes))
    page = staff.get("/admin/dashboard/", {"range": "day"}).content.decode()
    assert "Each bar: 5 minutes." in page
    assert len(_bars(page)) == 3  # not all three in the day's last hourly bar


def test_a_day_with_older_decisions_keeps_its_hourly_bars(staff, now):
    _a_day(now)
    page = staff.get("/admin/dashboard/", {"range": "day"}).content.decode()
    assert "Each bar: 1 hour." in page
    assert len(_bars(page)) == 4  # 6, 5 and 3 hours before, and the last hour


@pytest.mark.parametrize("query", [{"range": "month"}, {"range": ""}, {"range": ["day", "week"]}])
def test_other_ranges_are_400_naming_the_parameter(staff, query):
    response = staff.get("/admin/dashboard/", query)
    assert response.status_code == 400 and b"range must be one of hour, day, week" in response.content


def test_an_empty_store_renders(staff):
    page = staff.get("/admin/dashboard/").content.decode()
    assert "No decisions in this range." in page and "None open." in page


def test_the_admin_index_links_the_dashboard(staff):
    assert 'href="/admin/dashboard/"' in staff.get("/admin/").content.decode()


def test_the_dashboard_is_for_staff_only(client):
    assert client.get("/admin/dashboard/").status_code == 302


def test_the_real_clock_is_the_default():
    assert pages.clock is dj_timezone.now


def test_a_dashboard_whose_decisions_were_all_made_this_moment_answers(staff, monkeypatch):
    """The finer chart of recent decisions has no bar yet when the first was made at the very
    moment the page is read, on a bar's edge: the page still answers, with the range's bars."""
    moment = T0 + timedelta(hours=2)  # on a minute's edge
    monkeypatch.setattr(pages, "clock", lambda: moment)
    make_decision(board="brd_a", card="card_1", chosen="agt_ada", created_at=moment)
    assert staff.get("/admin/dashboard/", {"range": "day"}).status_code == 200
