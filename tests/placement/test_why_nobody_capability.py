"""one-candidate counts the rostered agents that have the stage's capability."""
from datetime import datetime, timezone

from placement import Rules, decide
from placement.facts import AgentVerdict, Card, Facts, Requires, RosterRow

NOW = datetime(2026, 11, 13, 10, 0, tzinfo=timezone.utc)


def test_one_capable_agent_among_several_rostered_is_one_candidate():
    card = Card("brd_a", "card_1", "triage", Requires(("triage",)), None, NOW)
    roster = tuple(RosterRow(a, None, None, True, True, False, None)
                   for a in ("agt_solo", "agt_fix1", "agt_fix2"))
    eligibility = (AgentVerdict("agt_solo", "prn_solo", True),
                   AgentVerdict("agt_fix1", "prn_fix1", False, ("capability_mismatch",)),
                   AgentVerdict("agt_fix2", "prn_fix2", False, ("capability_mismatch",)))
    decided = decide(Facts(card=card, roster=roster, eligibility=eligibility), Rules(), NOW)
    assert (decided.chosen, decided.reason, decided.hold) == (None, "one-candidate", None)
