"""Adding a formula is one declaration: a formula only this test declares shows up, with no other
module touched, in the settings, the loop's reads and its backlog bound, the decision record
and the API, the admin, and the lab's arms."""

from __future__ import annotations

import pytest

from bench import value
from common import config
from placement import formulas
from placement.formulas import BY_LEAD, BY_RECORD, Formula, May, Need
from records.store import holds as stored
from superdispatch.loop.backlog import holdable
from tests.loop.test_backlog import row
from tests.service.test_config import GOOD
from tests.support.world import lane, make_world

PLAIN = "plain-record@1"


@pytest.fixture
def plain():
    """A test-only formula: the documented ranking under a name and label of its own."""
    with formulas.declared(Formula("plain-record", 1, "plain", (BY_RECORD,), needs={Need.RUNS})) as (
        declared,
    ):
        yield declared
    assert formulas.named(PLAIN) is None


@pytest.fixture
def patient():
    """Another: the waiting formula's steps, so it may hold a card for a busy agent."""
    declared = Formula(
        "patient", 2, "patient", (BY_RECORD, BY_LEAD), needs={Need.RUNS, Need.TIMING}, may={May.HOLD_BUSY}
    )
    with formulas.declared(declared):
        yield declared


def test_the_setting_takes_it_and_its_rule_names_it(plain):
    assert config.load({**GOOD, "SUPERDISPATCH_FORMULA": PLAIN}).formula == PLAIN
    rule = next(r for n, _, r in config.declared() if n == "SUPERDISPATCH_FORMULA")
    assert rule == "idle-stage-success-lru@3, wait-for-better@3, pull-aware@1 or plain-record@1"


def test_without_its_declaration_the_setting_refuses_it_by_name_and_rule():
    with pytest.raises(config.ConfigError) as err:
        config.load({**GOOD, "SUPERDISPATCH_FORMULA": PLAIN})
    assert str(err.value) == (
        "SUPERDISPATCH_FORMULA must be idle-stage-success-lru@3, wait-for-better@3 or pull-aware@1"
    )


@pytest.mark.django_db
@pytest.mark.storage
def test_the_loop_places_by_it_and_the_record_and_the_api_name_it(plain, api):
    decision = make_world(lane(), formula=PLAIN).decide_a_card()
    assert decision.policy == PLAIN and decision.chosen is not None
    assert api.get(f"/v1/decisions/{decision.id}").json()["decision"]["policy"] == PLAIN


@pytest.mark.django_db
@pytest.mark.storage
@pytest.mark.parametrize("timed_for", ["patient", "documented"])
def test_the_loop_reads_timing_only_for_a_formula_that_needs_it(patient, monkeypatch, timed_for):
    timed = []
    monkeypatch.setattr(stored, "timings", lambda now: timed.append(now) or ({}, {}))
    formula = next(f for f in formulas.every() if f.label == timed_for)
    assert make_world(lane(), formula=formula.recorded).decide_a_card().policy == formula.recorded
    assert len(timed) == (1 if Need.TIMING in formula.needs else 0)


def test_the_backlog_bound_counts_busy_agents_for_a_formula_that_may_hold_one(patient):
    roster = (row("a"), row("b", busy=True))
    assert holdable(roster, frozenset(), None, patient.recorded) == 2
    assert holdable(roster, frozenset(), None, formulas.DEFAULT.recorded) == 1


@pytest.mark.django_db
@pytest.mark.storage
def test_the_admin_filters_decisions_by_it(plain, staff):
    card_id = make_world(lane(), formula=PLAIN).decide_a_card().card_id
    listed = staff.get("/admin/records/decision/").content.decode()
    assert "?formula=plain-record%401" in listed
    found = staff.get(f"/admin/records/decision/?formula={PLAIN}").context["cl"].result_list
    assert [d.card_id for d in found] == [card_id]
    assert (
        not staff.get(f"/admin/records/decision/?formula={formulas.DEFAULT.recorded}")
        .context["cl"]
        .result_list
    )


def test_the_lab_runs_it_as_an_arm_by_its_label(plain, monkeypatch):
    placed = []
    monkeypatch.setattr(value, "run_placed", lambda scenario, seconds, **settings: placed.append(settings))
    runners = value.arm_runners()
    assert list(runners) == ["pull", "documented", "waiting", "pull-aware", "plain", "tuned", "learned"]
    runners["plain"](None, 60)
    runners["waiting"](None, 60)
    assert placed == [{"formula": PLAIN}, {"formula": "wait-for-better@3"}]


def test_a_label_the_lab_uses_for_an_arm_of_its_own_is_refused():
    with formulas.declared(Formula("tuned-up", 1, "tuned", (BY_RECORD,), needs={Need.RUNS})):
        with pytest.raises(ValueError, match="tuned"):
            value.arm_runners()
