from dataclasses import replace

from placement.load import direct_load, roster_load
from tests.support.placement import (
    NOW,
    ago,
    board,
    decided,
    failing,
    load_row,
    roster_row,
    verdict,
    with_rows,
)


def test_roster_row_gives_capacity_one_and_busy_is_one_in_flight():
    shape = roster_load(roster_row("agt_ada", busy=True, last_took_work_at=ago(60)))
    assert (shape.in_flight, shape.capacity, shape.idle, shape.source) == (1, 1, False, "roster")
    assert shape.last_seen_at == ago(60)


def test_roster_row_is_healthy_only_when_enabled_and_ready():
    assert roster_load(roster_row("agt_ada")).healthy
    assert not roster_load(roster_row("agt_ada", ready=False)).healthy
    assert not roster_load(roster_row("agt_ada", enabled=False)).healthy


def test_direct_row_capacity_as_reported_else_one():
    assert direct_load(load_row("agt_eli", capacity=3, in_flight=2), NOW).idle
    shape = direct_load(load_row("agt_eli", capacity=None, in_flight=1), NOW)
    assert (shape.capacity, shape.idle, shape.source) == (1, False, "direct")


def test_direct_row_is_healthy_when_heard_from_within_the_hour():
    assert direct_load(load_row("agt_eli", last_heartbeat_at=ago(minutes=60)), NOW).healthy
    assert not direct_load(load_row("agt_eli", last_heartbeat_at=ago(minutes=60, seconds=1)), NOW).healthy


def test_direct_agent_never_heard_from_is_not_healthy():
    shape = direct_load(load_row("agt_eli", last_heartbeat_at=None), NOW)
    assert not shape.healthy and shape.last_seen_at is None


def _with_direct_agent(**rules_facts):
    facts = with_rows(board(), eligibility=[verdict("agt_eli")])
    return replace(facts, load=(load_row("agt_eli"),), **rules_facts)


def test_roster_candidate_set_leaves_an_agent_with_its_own_token_out():
    decision = decided(_with_direct_agent())
    eli = decision.candidate("agt_eli")
    assert not eli.in_set and eli.source == "direct"
    assert [(f.filter, f.reason) for f in eli.filters] == [("roster", "not-on-roster")]


def test_all_candidate_set_adds_agents_reporting_load_without_a_bridge_row():
    eli = decided(_with_direct_agent(), candidates="all").candidate("agt_eli")
    assert eli.in_set and eli.source == "direct" and eli.eligible
    assert eli.load.source == "direct"


def test_all_candidate_set_places_only_the_roster_when_the_load_read_failed():
    facts = replace(_with_direct_agent(), load=None)
    assert not decided(facts, candidates="all").candidate("agt_eli").in_set


def test_disabled_bridge_row_keeps_its_agent_out_even_with_all():
    facts = with_rows(board("agt_ada", "agt_bob", "agt_cyd"), roster=[roster_row("agt_cyd", enabled=False)])
    facts = replace(facts, load=(load_row("agt_cyd"),))
    cyd = decided(facts, candidates="all").candidate("agt_cyd")
    assert not cyd.in_set and cyd.source == "roster"
    assert [f.reason for f in cyd.filters] == ["not-on-roster"]


def test_agents_loaded_but_never_judged_nor_rostered_are_not_considered():
    facts = replace(board(), load=(load_row("agt_zed"),))
    assert decided(facts, candidates="all").candidate("agt_zed") is None


def test_considered_is_the_union_of_the_eligibility_read_and_the_roster():
    facts = replace(board(), eligibility=(verdict("agt_ada"), verdict("agt_eli")))
    assert [c.agent_id for c in decided(facts).candidates] == ["agt_ada", "agt_bob", "agt_eli"]


def test_rostered_agent_missing_from_eligibility_is_not_claimable():
    facts = replace(board("agt_ada", "agt_bob"), eligibility=(verdict("agt_ada"),))
    decision = decided(facts)
    assert [f.reason for f in decision.candidate("agt_bob").filters if not f.passed] == ["not-claimable"]


def test_off_roster_agent_is_capable_unless_its_verdict_says_capability_mismatch():
    facts = with_rows(
        board(),
        eligibility=[
            verdict("agt_eli", "grant_denied"),
            verdict("agt_fay", "capability_mismatch", "grant_denied"),
        ],
    )
    decision = decided(facts)
    assert decision.candidate("agt_eli").capable is True
    assert decision.candidate("agt_fay").capable is False
    assert decision.candidate("agt_ada").capable is None


def test_capable_follows_the_roster_not_the_candidate_set():
    """`capable` is only for an agent off the roster: a direct agent in the set under `all` has
    one, and a rostered agent whose row is disabled (outside the set) has none."""
    facts = with_rows(
        board("agt_ada", "agt_bob"),
        roster=[roster_row("agt_bob", enabled=False)],
        eligibility=[verdict("agt_eli"), verdict("agt_fay", "capability_mismatch")],
    )
    facts = replace(facts, load=(load_row("agt_eli"), load_row("agt_fay")))
    decision = decided(facts, candidates="all")
    eli, fay, bob = (decision.candidate(a) for a in ("agt_eli", "agt_fay", "agt_bob"))
    assert (eli.in_set, eli.source, eli.capable) == (True, "direct", True)
    assert (fay.in_set, fay.source, fay.capable) == (True, "direct", False)
    assert (bob.in_set, bob.source, bob.capable) == (False, "roster", None)
    records = {c["candidate"]["agentId"]: c for c in decision.to_record()["candidates"]}
    assert records["agt_eli"]["capable"] is True and records["agt_fay"]["capable"] is False
    assert "capable" not in records["agt_bob"] and "capable" not in records["agt_ada"]


def test_principal_comes_from_the_roster_row_then_the_eligibility_read():
    facts = with_rows(
        board(),
        roster=[roster_row("agt_ada", principal_id=None)],
        eligibility=[verdict("agt_ada", principal_id="prn_from_read")],
    )
    assert decided(facts).candidate("agt_ada").principal_id == "prn_from_read"


def test_duplicate_bridge_rows_keep_the_agent_out_if_either_is_disabled_whatever_the_order():
    rows = (roster_row("agt_bob", key="a"), roster_row("agt_bob", key="b", enabled=False))
    for ordered in (rows, rows[::-1]):
        facts = replace(board(), roster=(roster_row("agt_ada"), *ordered))
        assert not decided(facts).candidate("agt_bob").in_set


def test_duplicate_eligibility_rows_take_the_refusal_whatever_the_order():
    rows = (verdict("agt_bob"), verdict("agt_bob", "grant_denied"))
    for ordered in (rows, rows[::-1]):
        facts = replace(board(), eligibility=(verdict("agt_ada"), *ordered))
        assert failing(decided(facts), "agt_bob") == ["grant-denied"]
