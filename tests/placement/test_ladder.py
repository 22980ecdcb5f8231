from dataclasses import replace

import pytest

from placement.facts import HoldLog, Ladder
from tests.support.placement import board, decided


def _ranked_board(*agent_ids):
    """Agents ranked in the order given, by their success on the board."""
    settled = {agent_id: (len(agent_ids) - place, len(agent_ids)) for place, agent_id in enumerate(agent_ids)}
    return replace(board(*agent_ids), holds=HoldLog(settled=settled))


def _step(facts, step, passed_over=(), **rules):
    return decided(replace(facts, ladder=Ladder(step=step, passed_over=frozenset(passed_over))), **rules)


def test_winner_step_holds_the_best_for_the_reservation_window():
    decision = _step(_ranked_board("agt_ada", "agt_bob", "agt_cyd"), 0)
    assert (decision.tier.name, decision.tier.step) == ("winner", 1)
    assert (decision.hold.agent_id, decision.hold.seconds) == ("agt_ada", 60)
    assert decision.record and decision.reason is None


def test_runner_up_steps_hold_the_next_best_for_the_runner_up_window():
    facts = _ranked_board("agt_ada", "agt_bob", "agt_cyd")
    second = _step(facts, 1, {"agt_ada"})
    third = _step(facts, 2, {"agt_ada", "agt_bob"})
    assert [(d.tier.name, d.tier.step, d.chosen, d.hold.seconds) for d in (second, third)] == [
        ("runner-up", 2, "agt_bob", 30),
        ("runner-up", 3, "agt_cyd", 30),
    ]


@pytest.mark.parametrize(
    "top_k, tiers",
    [
        (1, ["winner", "any-match"]),
        (2, ["winner", "runner-up", "any-match"]),
        (3, ["winner", "runner-up", "runner-up", "any-match"]),
    ],
)
def test_ladder_relaxes_from_winner_to_runner_ups_to_any_match(top_k, tiers):
    facts = _ranked_board("agt_ada", "agt_bob", "agt_cyd", "agt_dan", "agt_eve")
    passed_over: list[str] = []
    seen = []
    for step in range(top_k + 1):
        decision = _step(facts, step, passed_over, top_k=top_k)
        seen.append(decision.tier.name)
        if decision.chosen:
            passed_over.append(decision.chosen)
    assert seen == tiers
    assert passed_over == ["agt_ada", "agt_bob", "agt_cyd"][:top_k]
    assert decision.reason == "any-match" and decision.hold is None and decision.record
    assert decision.tier.step == top_k + 1


def test_rerank_between_steps_neither_skips_nor_repeats_anyone():
    # Step 1 held ada. By step 2 the ranking has changed: cyd now leads and ada ranks last.
    after = _ranked_board("agt_cyd", "agt_bob", "agt_ada")
    second = _step(after, 1, {"agt_ada"})
    third = _step(after, 2, {"agt_ada", second.chosen})
    assert (second.chosen, third.chosen) == ("agt_cyd", "agt_bob")


def test_runner_up_step_with_nobody_left_opens_the_card_at_once():
    decision = _step(_ranked_board("agt_ada", "agt_bob"), 2, {"agt_ada", "agt_bob"}, top_k=5)
    assert (decision.reason, decision.tier.name, decision.tier.step) == ("any-match", "any-match", 3)
    assert decision.record and decision.hold is None


def test_open_ladder_is_not_held_again_and_nothing_is_recorded():
    facts = replace(_ranked_board("agt_ada", "agt_bob"), ladder=Ladder(step=3, open=True))
    decision = decided(facts)
    assert (decision.reason, decision.chosen, decision.hold, decision.record) == (
        "any-match",
        None,
        None,
        False,
    )


def test_spent_ladder_still_records_every_candidate():
    decision = _step(_ranked_board("agt_ada", "agt_bob"), 3, {"agt_ada"})
    assert decision.reason == "any-match"
    assert [c.agent_id for c in decision.candidates] == ["agt_ada", "agt_bob"]
    assert decision.candidate("agt_bob").score is not None
