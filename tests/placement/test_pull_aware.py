"""pull-aware@1: the whole lead time weighed, stepping aside where pull does as well, a lone idle
candidate held, each hold sized by its agent; and the pure estimates it stands on (`lead.py`)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings, strategies as st

from placement import PULL_AS_GOOD, Rules, decide, lead
from placement.facts import Facts, HoldLog, Timing
from placement.formulas import PULL_AWARE
from placement.lead import LeadTerms, evidence, hold_length, race
from tests.support.placement import NOW, ago, card, roster_row, run, verdict

NEW = PULL_AWARE.recorded


def _runs(principal: str, succeeded: int, of: int = 10):
    return tuple(run(principal, i < succeeded, age_days=0.01) for i in range(of))


def _facts(
    agents: dict[str, tuple[int, float, float]],
    *,
    ready_s_ago: float = 0,
    window_s: int | None = None,
    p95: dict[str, float] | None = None,
    busy: tuple[str, ...] = (),
) -> Facts:
    """Agents by id: (successes of 10 runs, median claim seconds, run seconds)."""
    return Facts(
        card=card(ready_at=ago(ready_s_ago)),
        roster=tuple(roster_row(a, busy=a in busy) for a in agents),
        eligibility=tuple(verdict(a) for a in agents),
        runs={
            f"prn_{a.removeprefix('agt_')}": _runs(f"prn_{a.removeprefix('agt_')}", s)
            for a, (s, _, _) in agents.items()
        },
        timing=Timing(
            claim_latency_s={a: c for a, (_, c, _) in agents.items()},
            run_s={a: (r,) * 5 for a, (_, _, r) in agents.items()},
            claim_p95_s=p95 or {},
        ),
        window_s=window_s,
    )


def _decided(facts: Facts, **rules):
    return decide(facts, Rules(formula=NEW, **rules), NOW)


# --- The decisions ----------------------------------------------------------------------------


def test_it_holds_the_sure_slow_poller_over_a_quick_weak_one_and_says_what_it_weighed():
    facts = _facts({"agt_quick": (5, 0.5, 60.0), "agt_sure": (10, 7.5, 60.0)}, window_s=0)
    decided = _decided(facts)
    assert decided.chosen == "agt_sure" and decided.reason is None
    outlook = decided.to_record()["outlook"]
    assert outlook["agentId"] == "agt_sure" and outlook["steppedAside"] is False
    assert outlook["holdS"] < outlook["pullS"]
    terms = decided.to_record()["candidates"][1]["score"]["terms"]
    assert set(terms) >= {"claimS", "runS", "success", "retryS", "expectedS", "successRate"}


def test_it_steps_aside_where_the_fleet_does_not_differ_and_records_why():
    facts = _facts({"agt_ada": (8, 5.0, 60.0), "agt_bob": (8, 5.0, 60.0)}, window_s=0)
    decided = _decided(facts)
    assert decided.chosen is None and decided.hold is None and decided.reason == PULL_AS_GOOD
    assert decided.record  # recorded, not a wait
    assert decided.to_record()["outlook"]["steppedAside"] is True


def test_a_hold_its_agent_ignores_costs_the_hold_and_a_placement_again():
    agents = {"agt_flaky": (10, 3.0, 60.0), "agt_sure": (4, 3.0, 60.0)}
    trusted = _decided(_facts(agents, window_s=0))
    assert trusted.chosen == "agt_flaky"  # likelier to succeed, and nothing says it ignores holds
    flaky = replace(
        _facts(agents, window_s=0), holds=HoldLog(settled={"agt_flaky": (10, 30), "agt_sure": (30, 30)})
    )
    decided = _decided(flaky)
    terms = {c.agent_id: c.score.terms for c in decided.candidates}
    assert terms["agt_flaky"].show == pytest.approx(lead.show_rate(10, 30))
    assert terms["agt_flaky"].expected_s > terms["agt_sure"].expected_s
    assert decided.chosen != "agt_flaky"
    record = decided.to_record()["candidates"][0]["score"]["terms"]
    assert {"show", "holdS"} <= set(record)


def test_a_longer_run_costs_the_cards_behind_it_where_the_fleet_is_busy():
    agents = {
        "agt_quick": (6, 1.0, 45.0),
        "agt_sure": (10, 4.0, 90.0),
        "agt_cal": (6, 1.0, 45.0),
        "agt_dee": (6, 1.0, 45.0),
    }
    quiet = _decided(_facts(agents, window_s=0))
    busy = _decided(_facts(agents, window_s=0, busy=("agt_cal", "agt_dee")))
    terms = {c.agent_id: c.score.terms for c in busy.candidates if c.score is not None}
    assert set(terms) == {"agt_quick", "agt_sure"}
    # half the fleet busy: the sure agent's longer run costs the cards behind it, the quick one's saves
    assert terms["agt_sure"].queue_s > 0 > terms["agt_quick"].queue_s
    quiet_terms = {c.agent_id: c.score.terms for c in quiet.candidates if c.score is not None}
    assert all(t.queue_s == 0 for t in quiet_terms.values())  # nobody busy: no queue to pay


def test_the_queue_term_is_the_extra_run_over_pulls_winner_times_the_share_busy():
    timing = Timing(
        claim_latency_s={"agt_a": 1.0, "agt_b": 4.0}, run_s={"agt_a": (45.0,) * 40, "agt_b": (90.0,) * 40}
    )
    ev = lead.with_holds(
        evidence(timing, {"agt_a": 0.6, "agt_b": 0.95}), {}, {"agt_a": 30, "agt_b": 30}, busy=0.5
    )
    shares = race(["agt_a", "agt_b"], ev).shares
    pulls_run = shares["agt_a"] * ev.run("agt_a") + shares["agt_b"] * ev.run("agt_b")
    assert ev.queue("agt_b") == pytest.approx((ev.run("agt_b") - pulls_run) * 0.5)
    assert shares["agt_a"] > 0.5 and ev.queue("agt_b") > 0


def test_a_new_agent_is_not_taken_for_a_no_show():
    assert lead.show_rate(0, 0) == pytest.approx(lead.SHOW_TYPICAL)
    assert lead.show_rate(20, 30) < lead.show_rate(30, 30) < 1


def test_the_rest_of_the_window_counts_against_pull():
    agents = {"agt_ada": (8, 5.0, 60.0), "agt_bob": (8, 5.0, 60.0)}
    assert _decided(_facts(agents, window_s=10)).chosen is not None  # pull waits 10 s more
    assert _decided(_facts(agents, window_s=10, ready_s_ago=10)).reason == PULL_AS_GOOD


def test_a_lone_idle_candidate_is_held_where_the_documented_formula_leaves_it_to_pull():
    facts = _facts({"agt_ada": (8, 5.0, 60.0)}, window_s=0)
    assert _decided(facts).chosen == "agt_ada"
    assert decide(facts, Rules(), NOW).reason == "one-candidate"


def test_a_lone_busy_candidate_is_still_one_candidate():
    facts = _facts({"agt_ada": (8, 5.0, 60.0)}, busy=("agt_ada",))
    assert _decided(facts).reason == "one-candidate"


@pytest.mark.parametrize(
    "p95, low, expected",
    [
        (None, 10, 60),  # a new agent: the configured window
        (2.0, 10, 10),  # quick: the least an operator allows
        (20.0, 10, 35),  # 20 x 1.5 + 5
        (200.0, 10, 60),  # never longer than configured
    ],
)
def test_each_hold_is_sized_by_its_agents_p95_time_to_claim(p95, low, expected):
    facts = _facts(
        {"agt_quick": (5, 0.5, 60.0), "agt_sure": (10, 7.5, 60.0)},
        window_s=0,
        p95={"agt_sure": p95} if p95 is not None else {},
    )
    assert _decided(facts, hold_min_s=low).hold.seconds == expected


def test_the_documented_formula_records_no_outlook_and_sizes_no_hold():
    facts = _facts({"agt_quick": (5, 0.5, 60.0), "agt_sure": (10, 7.5, 60.0)}, p95={"agt_sure": 2.0})
    decided = decide(facts, Rules(), NOW)
    assert "outlook" not in decided.to_record() and decided.hold.seconds == 60


def test_without_timing_the_documented_order_stands_and_nothing_is_weighed():
    facts = _facts({"agt_quick": (5, 0.5, 60.0), "agt_sure": (10, 7.5, 60.0)})
    facts = Facts(**{**facts.__dict__, "timing": None})
    decided = _decided(facts)
    assert decided.chosen == decide(facts, Rules(), NOW).chosen and decided.outlook is None


# --- The pure estimates -----------------------------------------------------------------------


def test_pulls_race_is_won_by_the_quickest_poller_and_ends_with_its_first_poll():
    ev = evidence(Timing(claim_latency_s={"a": 1.0, "b": 10.0}, run_s={}), {"a": 0.5, "b": 0.5})
    r = race(["a", "b"], ev)
    assert r.shares["a"] > 0.9 and r.claim_s < 1.0
    alone = race(["a"], ev)
    assert alone.claim_s == pytest.approx(1.0, rel=0.02)


def test_the_setting_bounds_cross_to_the_configured_window():
    assert hold_length(1.0, 90, 60) == 60


claims = st.floats(min_value=0.0, max_value=120.0)
runs_s = st.floats(min_value=1.0, max_value=600.0)
rates = st.integers(min_value=0, max_value=10)
agent_facts = st.dictionaries(
    st.sampled_from(["agt_a", "agt_b", "agt_c", "agt_d"]),
    st.tuples(rates, claims, runs_s),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(
    agent_facts,
    st.integers(min_value=0, max_value=30),
    st.floats(min_value=0, max_value=40),
    st.dictionaries(
        st.sampled_from(["agt_a", "agt_b", "agt_c", "agt_d"]), st.floats(min_value=0.0, max_value=500.0)
    ),
    st.integers(min_value=5, max_value=120),
)
def test_properties_of_its_decisions(agents, window, ready_ago, p95, low):
    facts = _facts(agents, window_s=window, ready_s_ago=ready_ago, p95=p95)
    decided = _decided(facts, hold_min_s=low)
    # it never holds a card it stepped aside from
    if decided.reason == PULL_AS_GOOD:
        assert decided.chosen is None and decided.hold is None and decided.outlook.stepped_aside
    # a hold's length is within its bounds
    if decided.hold is not None:
        assert min(low, 60) <= decided.hold.seconds <= 60
    # a lone idle candidate is held
    if len(agents) == 1:
        assert decided.chosen == next(iter(agents))
    # the terms it records are the terms it ranked by
    ranked = sorted((c for c in decided.candidates if c.score is not None), key=lambda c: -c.score.total)
    expected_s = [c.score.terms.expected_s for c in ranked]
    assert expected_s == sorted(expected_s)
    for c in ranked:
        t = c.score.terms
        assert isinstance(t, LeadTerms)
        shown = t.claim_s + t.run_s + t.queue_s + (1 - t.success) * t.retry_s
        assert t.expected_s == pytest.approx(t.show * shown + (1 - t.show) * (t.hold_s + t.retry_s))
        assert 0 < t.show < 1 and t.hold_s > 0
    if decided.chosen is not None:
        assert decided.chosen == ranked[0].agent_id


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.text("abc", min_size=1, max_size=3),
        st.tuples(claims, runs_s, st.floats(0, 1)),
        min_size=1,
        max_size=6,
    )
)
def test_properties_of_the_race(agents):
    ev = evidence(
        Timing(
            claim_latency_s={a: c for a, (c, _, _) in agents.items()},
            run_s={a: (r,) for a, (_, r, _) in agents.items()},
        ),
        {a: p for a, (_, _, p) in agents.items()},
    )
    r = race(list(agents), ev)
    assert sum(r.shares.values()) == pytest.approx(1.0)
    # pull claims no later than the quickest agent would, held, on average
    assert r.claim_s <= min(ev.claim(a) for a in agents) * 1.001
    # and its expectation lies within the racers' own
    own = [lead.expected(a, ev)[3] - ev.claim(a) for a in agents]
    assert min(own) - 1e-6 <= r.expected_s - r.claim_s <= max(own) + 1e-6


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.floats(min_value=0, max_value=1e4)), st.integers(1, 300), st.integers(1, 300))
def test_a_holds_length_is_within_its_bounds(p95, low, high):
    seconds = hold_length(p95, low, high)
    assert min(low, high) <= seconds <= high
    if p95 is None:
        assert seconds == high


def test_a_hold_likelier_to_succeed_at_no_later_time_is_not_stepped_aside_from():
    assert not lead.steps_aside(70.0, 70.0, hold_success=0.95, pull_success=0.6)
    assert lead.steps_aside(70.0, 70.0, hold_success=0.7, pull_success=0.65)
    assert lead.steps_aside(75.0, 70.0, hold_success=0.95, pull_success=0.6)  # later: pull has it


def test_it_holds_while_a_racers_timing_is_not_its_own_and_pulls_claims_count_as_its_own():
    facts = _facts({"agt_ada": (8, 5.0, 60.0), "agt_bob": (8, 5.0, 60.0)}, window_s=0)
    unknown = Timing(claim_latency_s={"agt_ada": 5.0}, run_s={"agt_ada": (60.0,) * 5, "agt_bob": (60.0,) * 5})
    assert _decided(Facts(**{**facts.__dict__, "timing": unknown})).chosen is not None
    by_pull = Timing(claim_latency_s={"agt_ada": 5.0}, run_s=unknown.run_s, pull_claim_s={"agt_bob": 5.0})
    assert _decided(Facts(**{**facts.__dict__, "timing": by_pull})).reason == PULL_AS_GOOD


def test_the_outlook_says_whether_the_whole_fleet_differs_busy_candidates_counted_as_idle():
    differing = _facts(
        {"agt_weak": (5, 0.5, 60.0), "agt_strong": (10, 7.5, 60.0)}, window_s=0, busy=("agt_strong",)
    )
    assert _decided(differing).outlook.fleet_differs is True
    alike = _facts({"agt_ada": (8, 5.0, 60.0), "agt_bob": (8, 5.0, 60.0)}, window_s=0, busy=("agt_bob",))
    assert _decided(alike).outlook.fleet_differs is False


def test_a_fleet_differs_for_the_window_only_where_a_hold_is_sooner_not_just_likelier():
    # the sure agent's hold is likelier to succeed, and no later than pull, so the card is held
    # for it; but it is not sooner by the share needed, so no window is worth every card's wait
    agents = {"agt_quick": (6, 1.0, 45.0), "agt_sure": (10, 4.5, 60.0)}
    decided = _decided(_facts(agents, window_s=0))
    outlook = decided.outlook
    assert decided.chosen == "agt_sure" and not outlook.stepped_aside
    assert outlook.hold_success >= outlook.pull_success + lead.SUCCESS_EDGE
    assert outlook.hold_s * (1 + lead.STEP_ASIDE_SHARE) >= outlook.pull_s
    assert outlook.fleet_differs is False
