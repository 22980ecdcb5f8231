from dataclasses import replace

from placement.facts import HoldLog
from tests.support.placement import ago, board, decided, roster_row, run, with_rows


def _totals(decision):
    return {c.agent_id: c.score.total for c in decision.candidates if c.score is not None}


def test_stage_record_weighs_first():
    facts = replace(
        board("agt_ada", "agt_bob"),
        runs={
            "prn_ada": tuple(run("prn_ada", False) for _ in range(3)),
            "prn_bob": tuple(run("prn_bob", True) for _ in range(3)),
        },
        holds=HoldLog(settled={"agt_ada": (9, 9)}),
    )
    decision = decided(facts)
    assert decision.chosen == "agt_bob"
    assert _totals(decision) == {"agt_ada": 1, "agt_bob": 2}


def test_success_rate_on_the_board_breaks_a_record_tie():
    facts = replace(
        board("agt_ada", "agt_bob"), holds=HoldLog(settled={"agt_ada": (1, 4), "agt_bob": (3, 4)})
    )
    decision = decided(facts)
    assert decision.chosen == "agt_bob"
    assert decision.candidate("agt_bob").score.terms.success_rate == 4 / 6
    assert decision.candidate("agt_ada").score.terms.success_rate == 2 / 6


def test_new_agent_success_rate_starts_at_one_half():
    assert decided(board()).candidate("agt_ada").score.terms.success_rate == 0.5


def test_least_recently_used_breaks_a_success_tie():
    facts = with_rows(
        board("agt_ada", "agt_bob"),
        roster=[
            roster_row("agt_ada", last_took_work_at=ago(minutes=5)),
            roster_row("agt_bob", last_took_work_at=ago(minutes=50)),
        ],
    )
    decision = decided(facts)
    assert decision.chosen == "agt_bob"
    assert decision.candidate("agt_bob").score.terms.since_last_dispatch_s == 3000.0


def test_station_that_never_took_work_ranks_first_among_the_least_recently_used():
    facts = with_rows(
        board("agt_ada", "agt_bob", "agt_cyd"),
        roster=[
            roster_row("agt_ada", last_took_work_at=ago(days=300)),
            roster_row("agt_cyd", last_took_work_at=None),
        ],
    )
    decision = decided(facts)
    assert decision.chosen == "agt_cyd"
    assert decision.candidate("agt_cyd").to_record()["score"]["terms"]["sinceLastDispatchS"] is None


def test_agent_id_settles_a_complete_tie():
    facts = with_rows(
        board("agt_bob", "agt_ada"),
        roster=[roster_row("agt_ada", last_took_work_at=None), roster_row("agt_bob", last_took_work_at=None)],
    )
    assert decided(facts).chosen == "agt_ada"


def test_totals_read_as_a_ranking_with_the_best_highest():
    facts = replace(
        board("agt_ada", "agt_bob", "agt_cyd"),
        holds=HoldLog(settled={"agt_ada": (0, 5), "agt_bob": (5, 5), "agt_cyd": (2, 5)}),
    )
    assert _totals(decided(facts)) == {"agt_bob": 3, "agt_cyd": 2, "agt_ada": 1}


def test_only_candidates_that_passed_every_filter_are_scored():
    facts = with_rows(board("agt_ada", "agt_bob"), roster=[roster_row("agt_bob", busy=True)])
    decision = decided(facts)
    assert decision.candidate("agt_bob").score is None
    assert decision.candidate("agt_ada").score.total == 1


def test_record_term_is_left_out_for_everyone_when_history_was_unread():
    decision = decided(board())
    for candidate in decision.candidates:
        assert candidate.stage_history is None
        assert candidate.score.terms.stage_record is None
        assert "stageRecord" not in candidate.to_record()["score"]["terms"]
        assert candidate.to_record()["stageHistory"] is None


def test_history_read_gives_every_eligible_candidate_a_record_even_without_runs():
    facts = replace(board(), runs={"prn_ada": (run("prn_ada"),)})
    decision = decided(facts)
    bob = decision.candidate("agt_bob").to_record()
    assert bob["score"]["terms"]["stageRecord"] == 0.5
    assert bob["stageHistory"] == {
        "runs": 0,
        "succeeded": 0,
        "verdicts": 0,
        "passes": 0,
        "weight": 0.0,
        "outcomeRate": 0.5,
        "verdictRate": 0.5,
        "stageRecord": 0.5,
    }
    assert decision.candidate("agt_ada").stage_history.runs == 1


def test_agent_without_a_principal_has_no_runs_to_join():
    facts = with_rows(
        replace(board(), runs={"prn_ada": (run("prn_ada"),) * 3}),
        roster=[roster_row("agt_ada", principal_id=None)],
    )
    facts = replace(facts, eligibility=tuple(v._replace(principal_id=None) for v in facts.eligibility))
    assert decided(facts).candidate("agt_ada").stage_history.runs == 0
