import pytest

from placement.facts import RegistryFact, Station, StationNeeds
from tests.support.placement import board, card, decided, failing, roster_row, station, with_rows

NEEDS = StationNeeds(
    isolation="container", models=("m-large", "m-small"), tools=("git", "rg"), credentials=("GITHUB_TOKEN",)
)


def _placed(needs=NEEDS, registry=(), **rules):
    return decided(board(card=card(needs=needs), registry=tuple(registry)), **rules)


def _filter(decision, agent_id, name):
    return next(f for f in decision.candidate(agent_id).filters if f.filter == name)


def test_station_that_has_everything_passes_every_station_filter():
    decision = _placed(
        registry=[station("stn_ada", tools=("git", "rg")), station("stn_bob", tools=("git", "rg"))]
    )
    assert failing(decision, "agt_ada") == [] and decision.chosen is not None


def test_each_station_rejection_records_what_the_station_lacks_in_the_stages_words():
    weak = station("stn_bob", isolation="host", models=("m-tiny",), tools=("git",), credentials=())
    decision = _placed(registry=[weak])
    rejected = [f for f in decision.candidate("agt_bob").filters if not f.passed]
    assert [(f.reason, f.missing) for f in rejected] == [
        ("isolation-too-weak", ("container",)),
        ("model-mismatch", ("m-large", "m-small")),
        ("tool-missing", ("rg",)),
        ("credential-missing", ("GITHUB_TOKEN",)),
    ]
    assert rejected[2].to_record() == {
        "filter": "tools",
        "passed": False,
        "reason": "tool-missing",
        "missing": ["rg"],
    }


def test_one_of_the_models_is_enough():
    decision = _placed(
        needs=StationNeeds(models=("m-large", "m-small")), registry=[station("stn_bob", models=("m-small",))]
    )
    assert _filter(decision, "agt_bob", "model").passed


def test_stronger_isolation_than_asked_passes():
    decision = _placed(
        needs=StationNeeds(isolation="container"), registry=[station("stn_bob", isolation="sandbox")]
    )
    assert _filter(decision, "agt_bob", "isolation").passed


def test_station_the_registry_does_not_list_fails_each_stated_need():
    decision = _placed(needs=StationNeeds(isolation="host", tools=("git",)), registry=[station("stn_ada")])
    assert failing(decision, "agt_bob") == ["isolation-too-weak", "tool-missing"]
    assert _filter(decision, "agt_bob", "model").passed  # the stage stated no model


def test_agent_with_no_station_fails_each_stated_need():
    facts = with_rows(
        board(card=card(needs=StationNeeds(credentials=("GITHUB_TOKEN",))), registry=(station("stn_ada"),)),
        roster=[roster_row("agt_bob", station_id=None)],
    )
    assert failing(decided(facts), "agt_bob") == ["credential-missing"]


def _station_at(proof):
    return Station(
        "stn_bob",
        isolation=RegistryFact("sandbox", proof),
        models=(RegistryFact("m-large", proof),),
        tools=(RegistryFact("git", proof),),
        credentials=(RegistryFact("GITHUB_TOKEN", proof),),
    )


@pytest.mark.parametrize(
    "proof, min_proof, counts",
    [
        ("declared", "declared", True),
        ("installed", "declared", True),
        ("probed", "declared", True),
        ("declared", "installed", False),
        ("installed", "installed", True),
        ("probed", "installed", True),
        ("declared", "probed", False),
        ("installed", "probed", False),
        ("probed", "probed", True),
        ("rumoured", "declared", False),  # a proof nobody defined counts for nothing
    ],
)
def test_a_fact_counts_only_at_the_minimum_proof_or_stronger(proof, min_proof, counts):
    needs = StationNeeds(
        isolation="sandbox", models=("m-large",), tools=("git",), credentials=("GITHUB_TOKEN",)
    )
    decision = _placed(needs=needs, registry=[_station_at(proof)], min_proof=min_proof)
    expected = (
        [] if counts else ["isolation-too-weak", "model-mismatch", "tool-missing", "credential-missing"]
    )
    assert failing(decision, "agt_bob") == expected


def test_unread_registry_leaves_the_needs_unchecked_not_failed():
    decision = decided(board(card=card(needs=NEEDS), registry=None))
    stations = [
        f
        for f in decision.candidate("agt_bob").filters
        if f.filter in ("isolation", "model", "tools", "credentials")
    ]
    assert [(f.passed, f.unchecked) for f in stations] == [(True, True)] * 4
    assert stations[0].to_record() == {"filter": "isolation", "passed": True, "unchecked": True}
    assert decision.chosen is not None


def test_stage_that_states_nothing_runs_and_records_no_station_filter():
    for needs in (None, StationNeeds()):
        decision = _placed(needs=needs, registry=[])
        assert "isolation" not in [f.filter for f in decision.candidate("agt_ada").filters]


def test_station_filters_off_runs_none_of_them():
    decision = _placed(registry=[], station_filters=False)
    assert [
        f.filter for f in decision.candidate("agt_ada").filters if f.filter in ("isolation", "tools")
    ] == []
    assert decision.chosen is not None


def test_isolation_level_nobody_defined_cannot_be_met():
    decision = _placed(needs=StationNeeds(isolation="vm"), registry=[station("stn_bob")])
    assert failing(decision, "agt_bob") == ["isolation-too-weak"]


def test_registry_order_does_not_matter():
    registry = [station("stn_ada", tools=("git", "rg")), station("stn_bob", tools=("rg",))]
    assert _placed(registry=registry) == _placed(registry=reversed(registry))
    assert _filter(_placed(registry=registry), "agt_bob", "tools").missing == ("git",)


def test_a_registry_read_again_is_judged_afresh_not_remembered_by_its_needs():
    has_rg = (station("stn_ada", tools=("git", "rg")), station("stn_bob", tools=("git", "rg")))
    lost_rg = (station("stn_ada", tools=("git", "rg")), station("stn_bob", tools=("git",)))
    for _ in range(2):  # the same registry tuple again, then a new read, in turn
        assert failing(_placed(registry=has_rg), "agt_bob") == []
        assert failing(_placed(registry=lost_rg), "agt_bob") == ["tool-missing"]


def test_one_registry_is_judged_anew_for_each_minimum_proof():
    registry = (_station_at("installed"),)
    needs = StationNeeds(tools=("git",))
    assert failing(_placed(needs=needs, registry=registry, min_proof="installed"), "agt_bob") == []
    assert failing(_placed(needs=needs, registry=registry, min_proof="probed"), "agt_bob") == ["tool-missing"]
    assert failing(_placed(needs=needs, registry=registry, min_proof="installed"), "agt_bob") == []
