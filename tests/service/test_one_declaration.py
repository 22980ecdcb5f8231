"""Adding a filter is one declaration, one function and its read: a filter only this test
declares shows up, with no other module touched, in the decision record, the reason-code
table, why nobody was chosen, learned routing's load, and the admin."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from placement import Rules, decide, filtering, filters, learned
from placement.facts import AgentVerdict, Card, Facts, Requires, RosterRow
from placement.filtering import Filter, Tag, tables
from placement.why_nobody import WAITING_ON_LOAD
from records.models import Decision
from records.store.actions.decisions import do_record_decision
from tests.conftest import T0
from tests.support.admin_pages import change_url

COOLING = "cooling-down"


@pytest.fixture
def cool_down():
    """A test-only filter: an agent that took work within the last two minutes is cooling
    down. It passes once time does, so it is tagged load."""

    def recently_busy(facts: Facts, pool, rules: Rules, now: datetime) -> frozenset[str]:
        return frozenset(
            agent_id
            for agent_id, load in pool.loads.items()
            if load.last_seen_at is not None and now - load.last_seen_at < timedelta(minutes=2)
        )

    def cooled_down(pool, recent: frozenset[str]) -> filtering.Verdicts:
        return declared.rejecting(recent)

    declared = Filter("coolDown", (COOLING,), filters.IDLE.order + 5, {Tag.LOAD}, recently_busy, cooled_down)
    with filtering.declared(declared):
        yield declared
    assert "coolDown" not in filtering.REASON_CODES


def _facts(*cooling: str) -> Facts:
    """agt_ada and agt_bob rostered and eligible; those named took work 30 s ago, the rest an hour ago."""
    agents = ("agt_ada", "agt_bob")
    return Facts(
        card=Card(
            "brd_a", "card_1", "review", Requires(all=("code-review",)), None, T0 - timedelta(minutes=1)
        ),
        roster=tuple(
            RosterRow(
                a,
                "prn_" + a[4:],
                None,
                True,
                True,
                False,
                T0 - (timedelta(seconds=30) if a in cooling else timedelta(hours=1)),
            )
            for a in agents
        ),
        eligibility=tuple(AgentVerdict(a, "prn_" + a[4:], True) for a in agents),
    )


def test_it_runs_in_its_place_and_is_recorded(cool_down):
    record = decide(_facts("agt_bob"), Rules(), T0).to_record()
    ada, bob = record["candidates"]
    names = [f["filter"] for f in bob["filters"]]
    assert names[names.index("idle") + 1] == "coolDown"
    assert {"filter": "coolDown", "passed": False, "reason": COOLING} in bob["filters"]
    assert {"filter": "coolDown", "passed": True} in ada["filters"]
    assert record["chosen"] == "agt_ada"


def test_it_is_in_the_reason_code_table(cool_down):
    assert filtering.REASON_CODES["coolDown"] == COOLING
    assert list(filtering.REASON_CODES).index("coolDown") == list(filtering.REASON_CODES).index("idle") + 1
    assert tables().codes[COOLING] is cool_down


def test_tagged_load_it_makes_the_card_wait_for_load_and_counts_as_busy(cool_down):
    decision = decide(_facts("agt_ada", "agt_bob"), Rules(), T0)
    assert decision.chosen is None and decision.reason == WAITING_ON_LOAD and not decision.record
    candidates = decision.to_record()["candidates"]
    assert learned.pool(candidates) == {"candidates": 2, "inSet": 2, "eligible": 0, "busy": 2}


@pytest.mark.django_db
@pytest.mark.storage
def test_the_admin_shows_it_on_the_decision_page_and_filters_by_its_reason(cool_down, staff):
    cooling = do_record_decision(decide(_facts("agt_bob"), Rules(), T0), T0)
    calm = do_record_decision(decide(_facts(), Rules(), T0), T0 + timedelta(seconds=1))
    page = staff.get(change_url(cooling)).content.decode()
    assert "coolDown" in page and COOLING in page
    listed = staff.get("/admin/records/decision/").content.decode()
    assert f"{COOLING} (coolDown)" in listed and "?turned_away=cooling-down" in listed
    turned_away = staff.get("/admin/records/decision/?turned_away=cooling-down")
    assert [d.id for d in turned_away.context["cl"].result_list] == [cooling.id]
    assert Decision.objects.count() == 2 and calm.id != cooling.id
