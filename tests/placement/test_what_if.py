"""What-if: recorded decisions replayed under another formula, with nothing read from after them."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from placement import Rules, ScoreTerms, StageHistory, decide
from placement.filtering import FilterResult
from placement.formulas import DEFAULT, PULL_AWARE, WAIT_FOR_BETTER
from placement.pull_steady import pull_steady, pull_steady_lanes
from placement.rankers import choose
from placement.replay import Considered, Known, Recorded
from placement.what_if import MIN_DECISIONS, PULL, what_if
from tests.placement.test_waiting import _facts
from tests.support.placement import NOW

T0 = datetime(2026, 11, 13, 10, 0, tzinfo=timezone.utc)
PASSED = (FilterResult("roster", True), FilterResult("capability", True), FilterResult("idle", True))
BUSY = (
    FilterResult("roster", True),
    FilterResult("capability", True),
    FilterResult("idle", False, "not-idle"),
)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def history(rate: float, runs: int = 10) -> StageHistory:
    return StageHistory(runs, round(rate * runs), 0, 0, float(runs), rate, 0.5, (rate + 0.5) / 2)


def idle(agent: str, *, outcome: float, claims: float, since: float = 100.0) -> Considered:
    stage = history(outcome)
    return Considered(agent, "prn_" + agent[4:], PASSED, ScoreTerms(stage.stage_record, claims, since), stage)


def busy(agent: str) -> Considered:
    return Considered(agent, "prn_" + agent[4:], BUSY, None, None)


def decision(
    n: int,
    made: float,
    chosen: str | None,
    candidates,
    *,
    claim_after: float | None = None,
    run_s: float | None = None,
    succeeded: bool = True,
    outcome: str | None = None,
    hold_s: float = 60,
    ready: float | None = None,
    formula: str = DEFAULT.recorded,
) -> Recorded:
    """A winner hold for `chosen`: claimed `claim_after` s after it (else expired), its run over
    `run_s` s after the claim."""
    claimed = claim_after is not None
    return Recorded(
        decision_id=f"pld_{n:024x}",
        board_id="brd_a",
        card_id=f"card_{n}",
        stage_key="review",
        formula=formula,
        at=at(made),
        tier="winner",
        reason=None,
        chosen=chosen,
        candidates=tuple(candidates),
        ready_at=at(made if ready is None else ready),
        held_until=at(made + hold_s) if chosen else None,
        outcome=outcome or ("claimed" if claimed else "expired" if chosen else None),
        outcome_by=chosen if claimed else None,
        outcome_at=at(made + claim_after) if claimed else at(made + hold_s) if chosen else None,
        run_status=("succeeded" if succeeded else "failed") if run_s is not None else None,
        run_ended_at=at(made + claim_after + run_s) if run_s is not None else None,
    )


# Before the window: A claims in 4 s and runs 100 s; B claims in 8 s and runs 200 s, and lets
# one hold lapse. Both runs succeeded: the lane's success so far is 1.
HISTORY = (
    decision(1, 0, "agt_a", [idle("agt_a", outcome=0.5, claims=0.5)], claim_after=4, run_s=100),
    decision(2, 10, "agt_b", [idle("agt_b", outcome=0.5, claims=0.5)], claim_after=8, run_s=200),
    decision(3, 20, "agt_b", [idle("agt_b", outcome=0.5, claims=0.5)]),
)
A = idle("agt_a", outcome=0.8, claims=0.75)
B = idle("agt_b", outcome=0.6, claims=0.5, since=500.0)
B_FIRST = idle("agt_b", outcome=0.9, claims=0.5)
# As known at the window: 2 of 3 holds claimed in the fleet; each rate drawn towards the fleet's
# (claims) or the lane's (runs) by two holds' or runs' worth.
CLAIM_A = (1 + 2 * 2 / 3) / (1 + 2)
CLAIM_B = (1 + 2 * 2 / 3) / (2 + 2)
OUTCOME_A = (8 + 2 * 1.0) / (10 + 2)  # 8 of its 10 recorded runs succeeded
OUTCOME_B = (6 + 2 * 1.0) / (10 + 2)


def _by_arm(answer):
    return {e.arm: e for e in answer.estimates}


def test_each_formula_against_a_hand_computed_case():
    # Recorded: A held, claimed in 2 s, its run succeeded 90 s later. The documented formula
    # ranks B first (its stage record is the higher), so the replay holds B instead.
    b = B_FIRST._replace(stage=history(0.6), terms=ScoreTerms(0.9, 0.5, 100.0))
    window = decision(10, 1000, "agt_a", [A, b], claim_after=2, run_s=90, formula="learned-pick@1")
    answer = what_if((*HISTORY, window), DEFAULT, Rules(), since=at(1000))
    assert answer.decisions == 1 and answer.replayed == 1
    assert answer.differs == {"same": 0, "another-agent": 1, "nobody": 0, "busy-agent": 0}
    arms = _by_arm(answer)

    recorded = arms["recorded"]
    assert recorded.estimator == "measured" and recorded.observed == 1
    assert (recorded.success.value, recorded.claim_mean_s.value, recorded.lead_mean_s.value) == (
        1.0,
        2.0,
        92.0,
    )

    # The model, per formula (too few arrivals to read a rate from: pull is the fleet as it
    # stood). Pull: A claims at 1/4 a second, B at 1/8: the first claim after 1 / 0.375 s, A's
    # 2/3 of the time.
    pull_success, pull_claim = 2 / 3 * OUTCOME_A + 1 / 3 * OUTCOME_B, 1 / 0.375
    pull_attempt = pull_claim + 2 / 3 * 100 + 1 / 3 * 200
    lapsed_claim, lapsed_attempt = 60 + pull_claim, 60 + pull_attempt  # a hold lapses after 60 s

    def hold(claims, outcome, latency, run):  # claimed at its claim rate, else it lapses to pull
        return (
            claims * outcome + (1 - claims) * pull_success,
            claims * latency + (1 - claims) * lapsed_claim,
            claims * (latency + run) + (1 - claims) * lapsed_attempt,
        )

    model_a, model_b = hold(CLAIM_A, OUTCOME_A, 4, 100), hold(CLAIM_B, OUTCOME_B, 8, 200)
    measured = (1.0, 2.0, 92.0)

    # Each other formula: what the record measured, plus the model's difference between its
    # choice and the recorded one.
    for arm, model in ((arms[PULL], (pull_success, pull_claim, pull_attempt)), (arms["other"], model_b)):
        assert arm.estimator == "doubly-robust" and arm.observed == 1
        success, claim, attempt = (m + x - a for m, x, a in zip(measured, model, model_a))
        assert arm.success.value == pytest.approx(success)
        assert arm.claim_mean_s.value == pytest.approx(claim)
        assert arm.lead_mean_s.value == pytest.approx(attempt / success)
    assert arms["other"].formula == DEFAULT.recorded
    assert arms["other"].success.value < arms[PULL].success.value < 1.0


def test_with_nothing_measured_yet_the_model_stands_alone():
    window = decision(10, 1000, "agt_a", [A, B])
    window = replace(window, outcome=None, outcome_at=None)
    arms = _by_arm(what_if((*HISTORY, window), DEFAULT, Rules(), since=at(1000)))
    assert [arms[arm].estimator for arm in ("recorded", "other", PULL)] == [
        "measured",
        "model-based",
        "model-based",
    ]
    assert arms["recorded"].observed == 0 and arms["other"].observed == 0  # agrees, but nothing known yet
    success = CLAIM_A * OUTCOME_A + (1 - CLAIM_A) * (2 / 3 * OUTCOME_A + 1 / 3 * OUTCOME_B)
    assert arms["recorded"].success.value == pytest.approx(success)
    assert arms["recorded"].success.low < success < arms["recorded"].success.high


def test_where_the_formulas_agree_the_recorded_outcome_corrects_the_model():
    # The documented formula ranks A first, as the record did: its run failed, and that stands.
    window = decision(10, 1000, "agt_a", [A, B], claim_after=3, run_s=50, succeeded=False)
    arms = _by_arm(what_if((*HISTORY, window), DEFAULT, Rules(), since=at(1000)))
    assert arms["other"].estimator == "doubly-robust" and arms["other"].observed == 1
    assert arms["other"].success.value == 0.0 and arms["other"].claim_mean_s.value == 3.0
    assert arms["other"].lead_mean_s.to_record(1)["value"] is None  # no success: no lead to one


WINDOW_ID = "pld_" + f"{10:024x}"


def _replayed(decisions, formula=DEFAULT, since=at(1000)):
    return {r.decision_id: r for r in what_if(decisions, formula, Rules(), since=since).replays}


def test_a_fact_from_after_a_decision_is_not_read():
    window = decision(10, 1000, "agt_b", [A, B], claim_after=5, run_s=100, outcome="claimed-by-other")
    window = replace(window, outcome_by="agt_a")
    alone = _replayed((*HISTORY, window))[WINDOW_ID]
    # Planted: a hold made before the decision but claimed after it (A took 900 s), and a later
    # decision whose claim and run say A is slow and B quick.
    claimed_late = decision(11, 900, "agt_a", [A], claim_after=900, run_s=5000)
    later = decision(12, 1500, "agt_b", [A, B], claim_after=1, run_s=1)
    later_a = decision(13, 1600, "agt_a", [A, B], claim_after=2000, run_s=9000)
    planted = _replayed((*HISTORY, claimed_late, window, later, later_a))[WINDOW_ID]
    assert planted.expectations == alone.expectations
    # The same facts from before the decision do change it: the check above could fail.
    before = decision(14, 20, "agt_a", [A], claim_after=900, run_s=5000)
    moved = _replayed((*HISTORY, before, window))[WINDOW_ID]
    assert moved.expectations["other"] != alone.expectations["other"]


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
    window = [
        decision(10 + n, 1000 + 10 * n, "agt_a", [A, B], claim_after=3, run_s=80)
        for n in range(MIN_DECISIONS)
    ]
    few = what_if((*HISTORY, *window[: MIN_DECISIONS - 1]), WAIT_FOR_BETTER, Rules(), since=at(1000))
    assert few.replayed == MIN_DECISIONS - 1 and not few.enough
    assert "too few decisions to judge" in few.verdict
    enough = what_if((*HISTORY, *window), WAIT_FOR_BETTER, Rules(), since=at(1000))
    assert enough.enough and "too few" not in enough.verdict


def test_the_waiting_formula_replayed_holds_for_a_busy_better_agent():
    # C is busy since its claim 50 s before the decision; its record (recorded while it was
    # idle) is far better than the idle A's, its runs last 60 s: wait-for-better holds for it.
    weak = idle("agt_a", outcome=0.5, claims=0.5)
    strong_then = Considered(
        "agt_c",
        "prn_c",
        PASSED,
        ScoreTerms(0.71, 0.5, 100.0),
        StageHistory(10, 10, 0, 0, 10.0, 11 / 12, 0.5, 0.71),
    )
    earlier = [
        decision(1 + n, 100 * n, "agt_c", [strong_then, weak], claim_after=2, run_s=60) for n in range(5)
    ]
    busy_now = decision(6, 880, "agt_c", [strong_then, weak], claim_after=2, run_s=60)  # claimed at 882
    window = decision(7, 932, "agt_a", [weak, busy("agt_c")], claim_after=2, run_s=60, ready=930)
    replayed = _replayed((*earlier, busy_now, window), WAIT_FOR_BETTER, since=at(932))
    other = replayed["pld_" + f"{7:024x}"].other
    assert other.agent_id == "agt_c" and other.busy
    assert other.wait_s == pytest.approx(10.0)  # what is left of its 60 s runs, 50 s in
    # Without the claim that has C working now, nothing says when it is free: nobody is waited for.
    assert (
        _replayed((*earlier, window), WAIT_FOR_BETTER, since=at(932))["pld_" + f"{7:024x}"].other.agent_id
        == "agt_a"
    )


def test_pull_in_the_steady_state_against_hand_computed_cases():
    # One agent claiming in 4 s, running 100 s, a card every 200 s: busy half the time. A card
    # finding it free is claimed in 4 s; one finding it busy waits half a run, then 4 s.
    success, claim, run = pull_steady(1 / 200, None, [(1 / 4, 100.0, 0.9)])
    assert success == pytest.approx(0.9)
    assert claim == pytest.approx(0.5 * 4 + 0.5 * (50 + 4), rel=1e-3)
    assert run == pytest.approx(100.0)
    # Hardly any cards: both agents free, the quicker to claim takes its share of the rates.
    success, claim, _ = pull_steady(1e-9, None, [(1 / 2, 60.0, 0.5), (1 / 6, 60.0, 0.9)])
    assert success == pytest.approx(0.75 * 0.5 + 0.25 * 0.9, rel=1e-3)
    assert claim == pytest.approx(1 / (1 / 2 + 1 / 6), rel=1e-3)
    # Busier, the quick one is often at work and the slow one takes more.
    busier, _, _ = pull_steady(1 / 60, None, [(1 / 2, 60.0, 0.5), (1 / 6, 60.0, 0.9)])
    assert busier > 0.75 * 0.5 + 0.25 * 0.9 + 0.05


def test_the_documented_formula_replayed_on_its_own_record_chooses_as_it_did():
    decided = decide(_facts(), Rules(), NOW)
    record = Recorded(
        decision_id="pld_" + "0" * 24,
        board_id=decided.card.board_id,
        card_id=decided.card.card_id,
        stage_key=decided.card.stage_key,
        formula=decided.formula,
        at=NOW,
        tier=decided.tier.name,
        reason=decided.reason,
        chosen=decided.chosen,
        candidates=tuple(
            Considered(
                c.agent_id, c.principal_id, c.filters, c.score.terms if c.score else None, c.stage_history
            )
            for c in decided.candidates
            if c.in_set
        ),
    )
    assert decided.chosen is not None
    assert choose(DEFAULT, record, Rules(), Known([record]).until(NOW)).agent_id == decided.chosen


def test_an_agent_busy_in_another_lane_is_not_free_for_this_one():
    # The quick, weak agent A also works a busy second lane; B, slow and strong, works only here.
    here = [("agt_a", 1 / 2, 60.0, 0.5), ("agt_b", 1 / 6, 60.0, 0.9)]
    (alone,) = pull_steady_lanes([(1 / 600, None, here)])
    shared, _ = pull_steady_lanes([(1 / 600, None, here), (1 / 80, None, [("agt_a", 1 / 2, 60.0, 0.9)])])
    assert alone[0] == pytest.approx(pull_steady(1 / 600, None, [(1 / 2, 60.0, 0.5), (1 / 6, 60.0, 0.9)])[0])
    assert shared[0] > alone[0] + 0.05  # A is at work in the other lane much of the time: B takes more


def test_under_pull_a_card_stays_with_whoever_let_it_go():
    # Every card here comes from the first lane, where only A works: A is free as it lets the
    # card go, and takes it on.
    first = (1 / 600, None, [("agt_a", 1 / 2, 60.0, 0.9)])
    here = (1 / 600, None, [("agt_a", 1 / 2, 60.0, 0.5), ("agt_b", 1 / 2, 60.0, 0.9)])
    raced = pull_steady_lanes([first, here])[1]
    carried = pull_steady_lanes([first, here], [{}, {0: 1.0}])[1]
    assert raced[0] == pytest.approx(0.7, abs=0.03)  # half each, A a little busier
    assert carried[0] == pytest.approx(0.5, abs=0.01) and carried[1] == pytest.approx(0.0)


# The new formula's window: A and B alike but for B's slow claims (30 s), each with five
# claimed holds and finished runs before it, and cards of theirs that nobody held.
def _alike(n: int, made: float, agent: str, claim_after: float) -> Recorded:
    return decision(n, made, agent, [idle(agent, outcome=0.8, claims=0.5)], claim_after=claim_after, run_s=60)


def _pulled(n: int, made: float, agent: str) -> Recorded:
    return replace(
        decision(n, made, None, [idle(agent, outcome=0.8, claims=0.5)]),
        outcome="claimed-by-other",
        outcome_by=agent,
        outcome_at=at(made + 3),
    )


NEW_HISTORY = tuple(
    [_alike(1 + k, 100 * k, "agt_a", 4) for k in range(5)]
    + [_alike(6 + k, 100 * k + 50, "agt_b", 30) for k in range(5)]
    + [_pulled(11, 600, "agt_a"), _pulled(12, 610, "agt_b")]
)


def test_the_new_formula_replayed_holds_for_the_better_agent_with_a_hold_sized_by_it():
    # Both claim in 4 s, but B succeeds far less often: pull's race would give B half the cards.
    history = tuple(
        [_alike(1 + k, 100 * k, "agt_a", 4) for k in range(5)]
        + [_alike(6 + k, 100 * k + 50, "agt_b", 4) for k in range(5)]
    )
    a, b = idle("agt_a", outcome=0.95, claims=0.5), idle("agt_b", outcome=0.3, claims=0.5)
    window = decision(20, 1000, "agt_b", [b, a], claim_after=4, run_s=60, ready=990)
    other = _replayed((*history, window), PULL_AWARE)["pld_" + f"{20:024x}"].other
    assert other.agent_id == "agt_a" and not other.aside
    assert other.hold_s == math.ceil(4 * 1.5 + 5)  # its p95 time to claim, 4 s, with the margin


def test_the_new_formula_replayed_steps_aside_where_pull_does_as_well():
    # Both claim in 4 s: the hold is no quicker than the race, and nobody is held.
    history = tuple(
        [_alike(1 + k, 100 * k, "agt_a", 4) for k in range(5)]
        + [_alike(6 + k, 100 * k + 50, "agt_b", 4) for k in range(5)]
        + [_pulled(11, 600, "agt_a"), _pulled(12, 610, "agt_b")]
    )
    a, b = idle("agt_a", outcome=0.8, claims=0.5), idle("agt_b", outcome=0.8, claims=0.5)
    window = decision(20, 1000, "agt_a", [a, b], claim_after=4, run_s=60, ready=990)
    replayed = _replayed((*history, window), PULL_AWARE)["pld_" + f"{20:024x}"]
    assert replayed.other.agent_id is None and replayed.other.aside
    # Nobody held: the card goes to whichever idle agent claims first, not to the record's claim.
    assert replayed.expectations["other"] != replayed.expectations["recorded"]


def test_the_new_formula_reads_nothing_from_after_a_decision():
    a, b = idle("agt_a", outcome=0.8, claims=0.5), idle("agt_b", outcome=0.8, claims=0.5)
    window = decision(20, 1000, "agt_b", [b, a], claim_after=30, run_s=60, ready=990)
    # B's hold made before the decision, as the record stood then: not settled yet.
    unsettled = replace(decision(30, 990, "agt_b", [b]), outcome=None, outcome_at=None)
    alone = _replayed((*NEW_HISTORY, unsettled, window), PULL_AWARE)["pld_" + f"{20:024x}"]
    # Planted: that hold claimed after the decision in 11 s, later claims saying B is quick
    # and A slow, and a later card of A's that nobody held.
    planted = (
        decision(30, 990, "agt_b", [b], claim_after=11, run_s=5),
        *[_alike(31 + k, 1100 + 10 * k, "agt_b", 1) for k in range(5)],
        *[_alike(36 + k, 1200 + 10 * k, "agt_a", 50) for k in range(5)],
        _pulled(41, 1300, "agt_a"),
    )
    with_later = _replayed((*NEW_HISTORY, window, *planted), PULL_AWARE)["pld_" + f"{20:024x}"]
    assert with_later.other == alone.other and with_later.expectations == alone.expectations
    # The same claims before the decision do change it: the check above could fail.
    before = tuple(
        replace(
            d,
            at=d.at - timedelta(seconds=1000),
            outcome_at=d.outcome_at - timedelta(seconds=1000) if d.outcome_at else None,
            held_until=d.held_until - timedelta(seconds=1000) if d.held_until else None,
            run_ended_at=d.run_ended_at - timedelta(seconds=1000) if d.run_ended_at else None,
        )
        for d in planted[1:]
    )
    moved = _replayed((*NEW_HISTORY, *before, window), PULL_AWARE, since=at(1000))["pld_" + f"{20:024x}"]
    assert moved.expectations["other"] != alone.expectations["other"]


def test_a_shorter_hold_keeps_only_the_claims_that_came_within_it():
    a, b = idle("agt_a", outcome=0.8, claims=0.5), idle("agt_b", outcome=0.8, claims=0.5)
    quick = decision(20, 1000, "agt_a", [a, b], claim_after=4, run_s=60)
    slow = decision(21, 1200, "agt_a", [a, b], claim_after=30, run_s=60)
    tuned = replace(Rules(), reservation_seconds=10)
    answer = what_if((*NEW_HISTORY, quick, slow), DEFAULT, Rules(), since=at(1000), other_rules=tuned)
    by_id = {r.decision_id: r for r in answer.replays}
    kept = by_id["pld_" + f"{20:024x}"]
    assert kept.expectations["other"] == kept.expectations["recorded"]  # claimed in 4 s, within 10 s
    lapsed = by_id["pld_" + f"{21:024x}"].expectations["other"]
    assert lapsed.claim_s > 10 and lapsed.claim_s < 30  # it lapses at 10 s and pull takes it
    assert lapsed.success < 1.0  # the recorded success is no longer its own


def test_with_no_window_the_new_formula_leaves_a_card_to_the_agent_that_let_it_go():
    # A ran the card's stage before (claimed at 900 s); the card came ready at 990 s, the record
    # still showing A busy. The new formula has set the board no window yet, so A, free as it
    # let the card go, claims it before any decision.
    before = replace(
        decision(30, 890, "agt_a", [idle("agt_a", outcome=0.8, claims=0.5)], claim_after=10),
        card_id="card_20",
        stage_key="code",
    )
    b = idle("agt_b", outcome=0.8, claims=0.5)
    window = decision(20, 1000, "agt_b", [busy("agt_a"), b], claim_after=4, run_s=60, ready=990)
    replayed = _replayed((*NEW_HISTORY, before, window), PULL_AWARE)["pld_" + f"{20:024x}"]
    assert replayed.other.agent_id is None and replayed.other.aside
    assert replayed.other.fleet_differs is None  # no decision was made
    # Claimed at once rather than after B's 30 s: the record's 4 s less the model's difference.
    assert replayed.expectations["other"].claim_s == pytest.approx(4 + 1.0 - 30)
    # Without that claim, nothing says who let it go: the formula decides as it would (B alone
    # is no better than pull's race of B alone, and it steps aside).
    alone = _replayed((*NEW_HISTORY, window), PULL_AWARE)["pld_" + f"{20:024x}"]
    assert alone.other.fleet_differs is not None
    assert alone.expectations["other"] != replayed.expectations["other"]


def test_pull_may_claim_past_the_filters_that_bar_a_hold_alone_as_their_tags_say():
    from placement.filtering import Tag, tables

    assert tables().names(Tag.PULL_MAY_CLAIM) == {"capacity", "idle", "held", "noShow", "passedOver"}
