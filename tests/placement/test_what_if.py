"""What-if: recorded decisions replayed under another formula, with nothing read from after them."""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from placement import Rules, ScoreTerms, StageHistory
from placement.filtering import FilterResult
from placement.formulas import DEFAULT, WAIT_FOR_BETTER
from placement.what_if import MIN_DECISIONS, PULL, Considered, Recorded, what_if

T0 = datetime(2026, 11, 13, 10, 0, tzinfo=timezone.utc)
PASSED = (FilterResult("roster", True), FilterResult("capability", True), FilterResult("idle", True))
BUSY = (FilterResult("roster", True), FilterResult("capability", True),
        FilterResult("idle", False, "not-idle"))


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def history(rate: float, runs: int = 10) -> StageHistory:
    return StageHistory(runs, round(rate * runs), 0, 0, float(runs), rate, 0.5, (rate + 0.5) / 2)


def idle(agent: str, *, outcome: float, claims: float, since: float = 100.0) -> Considered:
    stage = history(outcome)
    return Considered(agent, "prn_" + agent[4:], PASSED, ScoreTerms(stage.stage_record, claims, since), stage)


def busy(agent: str) -> Considered:
    return Considered(agent, "prn_" + agent[4:], BUSY, None, None)


def decision(n: int, made: float, chosen: str | None, candidates, *, claim_after: float | None = None,
             run_s: float | None = None, succeeded: bool = True, outcome: str | None = None,
             hold_s: float = 60, ready: float | None = None, formula: str = DEFAULT.recorded) -> Recorded:
    """A winner hold for `chosen`: claimed `claim_after` s after it (else expired), its run over
    `run_s` s after the claim."""
    claimed = claim_after is not None
    return Recorded(
        decision_id=f"pld_{n:024x}", board_id="brd_a", card_id=f"card_{n}", stage_key="review",
        formula=formula, at=at(made), tier="winner", reason=None, chosen=chosen,
        candidates=tuple(candidates), ready_at=at(made if ready is None else ready),
        held_until=at(made + hold_s) if chosen else None,
        outcome=outcome or ("claimed" if claimed else "expired" if chosen else None),
        outcome_by=chosen if claimed else None,
        outcome_at=at(made + claim_after) if claimed else at(made + hold_s) if chosen else None,
        run_status=("succeeded" if succeeded else "failed") if run_s is not None else None,
        run_ended_at=at(made + claim_after + run_s) if run_s is not None else None)


# Before the window: A claims in 4 s and runs 100 s, B claims in 8 s and runs 200 s.
HISTORY = (
    decision(1, 0, "agt_a", [idle("agt_a", outcome=0.5, claims=0.5)], claim_after=4, run_s=100),
    decision(2, 10, "agt_b", [idle("agt_b", outcome=0.5, claims=0.5)], claim_after=8, run_s=200),
)
A = idle("agt_a", outcome=0.8, claims=0.75)
B = idle("agt_b", outcome=0.6, claims=0.5, since=500.0)  # ranks first only by its terms below
B_FIRST = idle("agt_b", outcome=0.9, claims=0.5)


def _by_arm(answer):
    return {e.arm: e for e in answer.estimates}


def test_each_formula_against_a_hand_computed_case():
    # Recorded: A held, claimed in 2 s, its run succeeded 90 s later. The documented formula
    # ranks B first (its stage record is the higher), so the replay holds B instead.
    b = B_FIRST._replace(stage=history(0.6), terms=ScoreTerms(0.9, 0.5, 100.0))
    window = decision(3, 1000, "agt_a", [A, b], claim_after=2, run_s=90, formula="learned-pick@1")
    answer = what_if((*HISTORY, window), DEFAULT, Rules(), since=at(1000))
    assert answer.decisions == 1 and answer.replayed == 1
    assert answer.differs == {"same": 0, "another-agent": 1, "nobody": 0, "busy-agent": 0}
    arms = _by_arm(answer)

    recorded = arms["recorded"]
    assert recorded.estimator == "measured" and recorded.observed == 1
    assert (recorded.success.value, recorded.claim_mean_s.value, recorded.lead_mean_s.value) == (1.0, 2.0, 92.0)

    # Pull: A claims at 1/4 a second, B at 1/8: the first claim after 1 / 0.375 s, A's 2/3 of the time.
    pull = arms[PULL]
    assert pull.estimator == "model-based" and pull.observed == 0
    pull_success = 2 / 3 * 0.8 + 1 / 3 * 0.6
    assert pull.success.value == pytest.approx(pull_success)
    assert pull.claim_mean_s.value == pytest.approx(1 / 0.375)
    assert pull.lead_mean_s.value == pytest.approx((1 / 0.375 + 2 / 3 * 100 + 1 / 3 * 200) / pull_success)

    # A hold for B: claimed half the time (its claim rate) after 8 s, else it lapses after 60 s
    # and the card goes to pull.
    other = arms["other"]
    assert other.estimator == "model-based" and other.formula == DEFAULT.recorded
    success = 0.5 * 0.6 + 0.5 * pull_success
    claim = 0.5 * 8 + 0.5 * (60 + 1 / 0.375)
    attempt = 0.5 * (8 + 200) + 0.5 * (60 + 1 / 0.375 + 2 / 3 * 100 + 1 / 3 * 200)
    assert other.success.value == pytest.approx(success)
    assert other.claim_mean_s.value == pytest.approx(claim)
    assert other.lead_mean_s.value == pytest.approx(attempt / success)
    assert other.success.low < success < other.success.high


def test_where_the_formulas_agree_the_recorded_outcome_corrects_the_model():
    # The documented formula ranks A first, as the record did: its run failed, and that stands.
    window = decision(3, 1000, "agt_a", [A, B], claim_after=3, run_s=50, succeeded=False)
    arms = _by_arm(what_if((*HISTORY, window), DEFAULT, Rules(), since=at(1000)))
    assert arms["other"].estimator == "doubly-robust" and arms["other"].observed == 1
    assert arms["other"].success.value == 0.0 and arms["other"].claim_mean_s.value == 3.0
    assert arms["other"].lead_mean_s.to_record(1)["value"] is None  # no success: no lead to one


def _replayed(decisions, formula=DEFAULT, since=at(1000)):
    return {r.decision_id: r for r in what_if(decisions, formula, Rules(), since=since).replays}


def test_a_fact_from_after_a_decision_is_not_read():
    window = decision(3, 1000, "agt_b", [A, B], claim_after=5, run_s=100, outcome="claimed-by-other")
    window = replace(window, outcome_by="agt_a")
    alone = _replayed((*HISTORY, window))["pld_" + f"{3:024x}"]
    # Planted: a hold made before the decision but claimed after it (A took 900 s), and a later
    # decision whose claim and run say A is slow and B quick.
    claimed_late = decision(4, 900, "agt_a", [A], claim_after=900, run_s=5000)
    later = decision(5, 1500, "agt_b", [A, B], claim_after=1, run_s=1)
    later_a = decision(6, 1600, "agt_a", [A, B], claim_after=2000, run_s=9000)
    planted = _replayed((*HISTORY, claimed_late, window, later, later_a))["pld_" + f"{3:024x}"]
    assert planted.outlooks == alone.outlooks
    # The same facts from before the decision do change it: the check above could fail.
    before = decision(7, 20, "agt_a", [A], claim_after=900, run_s=5000)
    moved = _replayed((*HISTORY, before, window))["pld_" + f"{3:024x}"]
    assert moved.outlooks["other"] != alone.outlooks["other"]


def test_what_cannot_be_replayed_is_counted_with_why():
    no_timing = decision(1, 0, "agt_a", [A, B], claim_after=2, run_s=10)
    runner_up = replace(decision(2, 5, "agt_b", [A, B]), tier="runner-up")
    lone = replace(decision(3, 6, None, [A]), reason="one-candidate")
    nobody = replace(decision(4, 7, None, [busy("agt_a")]), reason="none-eligible")
    answer = what_if((no_timing, runner_up, lone, nobody), DEFAULT, Rules())
    assert answer.decisions == 4 and answer.replayed == 0
    assert answer.not_replayed == {
        "no claim before it to time claims by": 1,
        "a later step of its card's ladder: under another formula the ladder goes otherwise": 1,
        "no choice to make: no candidates, an empty lane or one candidate": 1,
        "nobody eligible to hold for": 1,
    }
    assert not answer.enough
    assert answer.verdict.startswith("too few decisions to judge (0 replayed; at least 30 are needed)")
    assert answer.to_record()["estimates"] == []


def test_too_few_decisions_are_said_plainly_and_enough_are_judged():
    window = [decision(10 + n, 1000 + 10 * n, "agt_a", [A, B], claim_after=3, run_s=80)
              for n in range(MIN_DECISIONS)]
    few = what_if((*HISTORY, *window[:MIN_DECISIONS - 1]), WAIT_FOR_BETTER, Rules(), since=at(1000))
    assert few.replayed == MIN_DECISIONS - 1 and not few.enough
    assert "too few decisions to judge" in few.verdict
    enough = what_if((*HISTORY, *window), WAIT_FOR_BETTER, Rules(), since=at(1000))
    assert enough.enough and "too few" not in enough.verdict


def test_the_waiting_formula_replayed_holds_for_a_busy_better_agent():
    # C is busy since its claim 50 s before the decision; its record (recorded while it was
    # idle) is far better than the idle A's, its runs last 60 s: wait-for-better holds for it.
    weak = idle("agt_a", outcome=0.5, claims=0.5)
    strong_then = Considered("agt_c", "prn_c", PASSED, ScoreTerms(0.71, 0.5, 100.0),
                             StageHistory(10, 10, 0, 0, 10.0, 11 / 12, 0.5, 0.71))
    earlier = [decision(1 + n, 100 * n, "agt_c", [strong_then, weak], claim_after=2, run_s=60)
               for n in range(5)]
    busy_now = decision(6, 880, "agt_c", [strong_then, weak], claim_after=2, run_s=60)  # claimed at 882
    window = decision(7, 932, "agt_a", [weak, busy("agt_c")], claim_after=2, run_s=60, ready=930)
    replayed = _replayed((*earlier, busy_now, window), WAIT_FOR_BETTER, since=at(932))
    other = replayed["pld_" + f"{7:024x}"].other
    assert other.agent_id == "agt_c" and other.busy
    assert other.wait_s == pytest.approx(10.0)  # what is left of its 60 s runs, 50 s in
    # Without the claim that has C working now, nothing says when it is free: nobody is waited for.
    assert _replayed((*earlier, window), WAIT_FOR_BETTER, since=at(932))["pld_" + f"{7:024x}"].other \
        .agent_id == "agt_a"
