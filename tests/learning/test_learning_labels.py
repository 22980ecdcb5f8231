import pytest

from learning.core.labels import label, target
from tests.support.learning_records import candidate, decision

ADA, BEN = candidate("agt_ada"), candidate("agt_ben")


def settled(status, by=None, chosen="agt_ada", tier=None):
    return decision([ADA, BEN], chosen=chosen, status=status, by=by, tier=tier)


def test_chosen_agent_that_claimed_is_won_claimed_and_a_positive():
    d = settled("claimed", by="agt_ada")
    assert label(d, ADA) == "won-claimed"
    assert target(label(d, ADA)) == 1


def test_chosen_agent_whose_hold_lapsed_is_won_expired_and_a_negative():
    d = settled("expired")
    assert label(d, ADA) == "won-expired"
    assert target("won-expired") == 0


def test_chosen_agent_beaten_to_the_card_is_won_claimed_by_other_and_a_negative():
    d = settled("claimed-by-other", by="agt_ben")
    assert label(d, ADA) == "won-claimed-by-other"
    assert target("won-claimed-by-other") == 0


def test_unchosen_agent_that_claimed_anyway_is_lost_claimed_and_a_positive():
    d = settled("claimed-by-other", by="agt_ben")
    assert label(d, BEN) == "lost-claimed"
    assert target("lost-claimed") == 1


def test_claimer_in_the_any_match_tier_with_nobody_chosen_is_lost_claimed():
    d = settled("claimed-by-other", by="agt_ben", chosen=None, tier={"name": "any-match", "step": 4})
    assert label(d, BEN) == "lost-claimed"
    assert label(d, ADA) == "lost"


def test_unchosen_agent_that_did_not_claim_is_lost_and_not_trained_on():
    for d in (
        settled("claimed", by="agt_ada"),
        settled("expired"),
        settled("claimed-by-other", by="agt_zed"),
    ):
        assert label(d, BEN) == "lost"
    assert target("lost") is None


@pytest.mark.parametrize("status", ["superseded", "not-reserved"])
def test_moved_card_or_refused_hold_is_void_for_everyone(status):
    d = settled(status, by="agt_ada")
    assert label(d, ADA) == "void"
    assert label(d, BEN) == "void"
    assert target("void") is None


def test_unsettled_decision_has_no_label():
    with pytest.raises(ValueError, match="not settled"):
        label(settled(None), ADA)


def test_unknown_label_has_no_target():
    with pytest.raises(ValueError, match="unknown label"):
        target("won")
