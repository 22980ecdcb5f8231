"""Who the pool counts and what it knows of each agent: capability for one-candidate, stations."""

from dataclasses import replace
from datetime import datetime, timedelta, timezone

from placement import Rules, decide
from placement.facts import (
    AgentLoad,
    AgentVerdict,
    Card,
    Facts,
    RegistryFact,
    Requires,
    RosterRow,
    Station,
    StationNeeds,
)
from tests.support.placement import (
    ago,
    board,
    card,
    decided,
    failing,
    load_row,
    roster_row,
    station,
    with_rows,
)

NOW = datetime(2026, 11, 13, 10, 0, tzinfo=timezone.utc)


def test_one_capable_agent_among_several_rostered_is_one_candidate():
    card = Card("brd_a", "card_1", "triage", Requires(("triage",)), None, NOW)
    roster = tuple(
        RosterRow(a, None, None, True, True, False, None) for a in ("agt_solo", "agt_fix1", "agt_fix2")
    )
    eligibility = (
        AgentVerdict("agt_solo", "prn_solo", True),
        AgentVerdict("agt_fix1", "prn_fix1", False, ("capability_mismatch",)),
        AgentVerdict("agt_fix2", "prn_fix2", False, ("capability_mismatch",)),
    )
    decided = decide(Facts(card=card, roster=roster, eligibility=eligibility), Rules(), NOW)
    assert (decided.chosen, decided.reason, decided.hold) == (None, "one-candidate", None)


def test_an_agent_reporting_its_own_load_is_judged_by_the_station_it_occupies():
    card = Card("brd_a", "card_1", "review", Requires(("code-review",)), StationNeeds(tools=("git",)), NOW)
    roster = tuple(RosterRow(a, None, None, True, True, False, None) for a in ("agt_a", "agt_b"))
    eligibility = tuple(AgentVerdict(a, "prn_" + a[4:], True) for a in ("agt_a", "agt_b", "agt_z"))
    load = (AgentLoad("agt_z", "prn_z", 0, 1, NOW),)
    registry = (Station("stn_z", occupant="agt_z", tools=(RegistryFact("git", "probed"),)),)
    facts = Facts(card=card, roster=roster, eligibility=eligibility, load=load, registry=registry)
    decided = decide(facts, Rules(candidates="all"), NOW)
    z = decided.candidate("agt_z")
    assert z.station_id == "stn_z" and z.eligible
    assert decided.chosen == "agt_z"  # the rostered agents have no station, so lack git


def test_a_roster_read_again_is_judged_afresh_not_remembered_by_its_agents():
    idle = board("agt_ada", "agt_bob")
    busy = with_rows(idle, roster=[roster_row("agt_bob", busy=True)])
    for _ in range(2):  # the same roster tuple again, then a new read, in turn
        assert failing(decided(idle), "agt_bob") == []
        assert failing(decided(busy), "agt_bob") == ["not-idle"]


def test_one_load_read_is_judged_anew_at_each_now():
    facts = replace(
        board("agt_ada", "agt_bob"),
        eligibility=board("agt_ada", "agt_bob", "agt_eli").eligibility,
        load=(load_row("agt_eli", last_heartbeat_at=ago(minutes=50)),),
    )
    later = NOW + timedelta(minutes=20)
    for _ in range(2):
        assert failing(decided(facts, candidates="all"), "agt_eli") == []
        assert failing(decide(facts, Rules(candidates="all"), later), "agt_eli") == ["unhealthy"]


def test_an_agent_off_the_roster_occupies_the_lowest_station_id_it_is_listed_in():
    facts = replace(
        board("agt_ada", "agt_bob", card=card(needs=StationNeeds(tools=("git",)))),
        eligibility=board("agt_ada", "agt_bob", "agt_eli").eligibility,
        load=(load_row("agt_eli"),),
        registry=(
            station("stn_ada"),
            station("stn_bob"),
            replace(station("stn_z", tools=()), occupant="agt_eli"),
            replace(station("stn_e"), occupant="agt_eli"),
        ),
    )
    eli = decided(facts, candidates="all").candidate("agt_eli")
    assert (eli.station_id, eli.eligible) == ("stn_e", True)
