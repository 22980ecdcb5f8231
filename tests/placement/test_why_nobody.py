from dataclasses import replace

from placement.facts import Facts, HoldLog, Ladder
from tests.support.placement import board, card, decided, load_row, roster_row, verdict, with_rows


def test_nobody_considered_is_no_candidates():
    decision = decided(Facts(card=card(), roster=(), eligibility=()))
    assert (decision.reason, decision.chosen, decision.record, decision.candidates) == (
        "no-candidates",
        None,
        True,
        (),
    )


def test_one_rostered_candidate_is_left_to_pull_but_its_filters_are_recorded():
    facts = with_rows(board("agt_ada"), eligibility=[verdict("agt_eli", "grant_denied")])
    decision = decided(facts)
    assert (decision.reason, decision.chosen, decision.hold, decision.record) == (
        "one-candidate",
        None,
        None,
        True,
    )
    assert decision.candidate("agt_ada").eligible and decision.candidate("agt_ada").score.total == 1


def test_a_roster_with_nobody_capable_is_an_empty_lane_not_one_candidate():
    facts = with_rows(
        board("agt_ada", "agt_bob"),
        eligibility=[
            verdict("agt_ada", "capability_mismatch"),
            verdict("agt_bob", "capability_mismatch"),
            verdict("agt_eli"),
        ],
    )
    decision = decided(facts)
    assert (decision.reason, decision.chosen, decision.hold, decision.record) == (
        "empty-lane",
        None,
        None,
        True,
    )
    assert decision.candidate("agt_eli").capable is True


def test_no_roster_at_all_with_agents_judged_off_it_is_an_empty_lane():
    facts = Facts(card=card(), roster=(), eligibility=(verdict("agt_eli"),))
    assert decided(facts).reason == "empty-lane"


def test_only_disabled_rows_with_the_capability_leave_the_lane_empty():
    facts = with_rows(board("agt_ada"), roster=[roster_row("agt_ada", enabled=False)])
    assert decided(facts).reason == "empty-lane"


def test_direct_candidates_alone_leave_the_lane_empty_under_candidates_all():
    facts = Facts(
        card=card(),
        roster=(),
        eligibility=(verdict("agt_eli"), verdict("agt_fay")),
        load=(load_row("agt_eli"), load_row("agt_fay")),
    )
    decision = decided(facts, candidates="all")
    assert decision.candidate("agt_eli").eligible
    assert (decision.reason, decision.chosen) == ("empty-lane", None)


def test_one_candidate_counts_rostered_candidates_even_when_they_are_ineligible():
    facts = with_rows(board("agt_ada"), roster=[roster_row("agt_ada", busy=True)])
    assert decided(facts).reason == "one-candidate"


def test_direct_candidates_do_not_make_a_choice_on_their_own():
    facts = with_rows(board("agt_ada"), eligibility=[verdict("agt_eli"), verdict("agt_fay")])
    facts = replace(facts, load=(load_row("agt_eli"), load_row("agt_fay")))
    decision = decided(facts, candidates="all")
    assert decision.candidate("agt_eli").eligible
    assert decision.reason == "one-candidate"


def test_two_rostered_candidates_let_a_direct_one_win():
    facts = with_rows(
        board("agt_ada", "agt_bob"),
        roster=[roster_row("agt_ada", busy=True), roster_row("agt_bob", busy=True)],
        eligibility=[verdict("agt_eli")],
    )
    facts = replace(facts, load=(load_row("agt_eli"),))
    assert decided(facts, candidates="all").chosen == "agt_eli"


def test_disabled_rows_do_not_count_toward_two_candidates():
    facts = with_rows(board("agt_ada", "agt_bob"), roster=[roster_row("agt_bob", enabled=False)])
    assert decided(facts).reason == "one-candidate"


def test_winner_step_with_nobody_eligible_is_none_eligible():
    facts = with_rows(board(), eligibility=[verdict("agt_ada", "grant_denied"), verdict("agt_bob", "x")])
    decision = decided(facts)
    assert (decision.reason, decision.chosen, decision.record, decision.tier.name) == (
        "none-eligible",
        None,
        True,
        "winner",
    )


def test_free_agent_holding_another_card_makes_the_card_wait_on_holds():
    facts = with_rows(board(), eligibility=[verdict("agt_ada", "grant_denied")])
    facts = replace(facts, holds=HoldLog(holding=frozenset({"agt_bob"})))
    decision = decided(facts)
    assert (decision.reason, decision.record, decision.hold) == ("waiting-on-holds", False, None)


def test_busy_agent_makes_the_card_wait_on_load():
    facts = with_rows(
        board(), roster=[roster_row("agt_bob", busy=True)], eligibility=[verdict("agt_ada", "grant_denied")]
    )
    decision = decided(facts)
    assert (decision.reason, decision.record) == ("waiting-on-load", False)


def test_agent_at_its_board_concurrency_makes_the_card_wait_on_load():
    facts = with_rows(
        board(),
        eligibility=[verdict("agt_ada", "concurrency_reached"), verdict("agt_bob", "concurrency_reached")],
    )
    assert decided(facts).reason == "waiting-on-load"


def test_unhealthy_agent_with_no_room_is_load_but_unhealthy_and_idle_is_not():
    busy_and_not_ready = with_rows(
        board(), roster=[roster_row("agt_ada", busy=True, ready=False), roster_row("agt_bob", ready=False)]
    )
    assert decided(busy_and_not_ready).reason == "waiting-on-load"
    idle_and_not_ready = with_rows(
        board(), roster=[roster_row("agt_ada", ready=False), roster_row("agt_bob", ready=False)]
    )
    assert decided(idle_and_not_ready).reason == "none-eligible"


def test_holding_another_while_also_busy_is_load_not_holds():
    facts = with_rows(
        board(), roster=[roster_row("agt_bob", busy=True)], eligibility=[verdict("agt_ada", "grant_denied")]
    )
    facts = replace(facts, holds=HoldLog(holding=frozenset({"agt_bob"})))
    assert decided(facts).reason == "waiting-on-load"


def test_waiting_on_holds_takes_precedence_over_waiting_on_load():
    facts = with_rows(board(), roster=[roster_row("agt_ada", busy=True)])
    facts = replace(facts, holds=HoldLog(holding=frozenset({"agt_bob"})))
    assert decided(facts).reason == "waiting-on-holds"


def test_load_does_not_wait_when_the_agent_also_fails_for_another_reason():
    facts = with_rows(
        board(),
        roster=[roster_row("agt_bob", busy=True)],
        eligibility=[verdict("agt_ada", "grant_denied"), verdict("agt_bob", "grant_denied")],
    )
    assert decided(facts).reason == "none-eligible"


def test_off_roster_agents_never_make_a_card_wait():
    facts = with_rows(
        board(),
        eligibility=[
            verdict("agt_ada", "grant_denied"),
            verdict("agt_bob", "grant_denied"),
            verdict("agt_eli", "concurrency_reached"),
        ],
    )
    assert decided(facts).reason == "none-eligible"


def test_runner_up_step_opens_the_card_rather_than_waiting():
    facts = with_rows(board(), roster=[roster_row("agt_bob", busy=True)])
    facts = replace(facts, ladder=Ladder(step=1, passed_over=frozenset({"agt_ada"})))
    decision = decided(facts)
    assert (decision.reason, decision.record) == ("any-match", True)
