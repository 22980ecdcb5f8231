"""What a pass reads besides the board, and how each read failing is handled."""

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from records.models import Board
from records.store.actions.boards import do_opt_out
from sandbox.replies import Refused
from tests.support.world import filters_of, lane, make_world, stations_lane

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def one_card_decided(w, **toggles):
    """Opt brd_a in, switch these failures on, add one card and sweep: its decision."""
    w.opt_in("brd_a")
    for name, value in toggles.items():
        setattr(w.suite.toggles, name, value)
    w.suite.pipeline.add_card("brd_a")
    w.sweep()
    [d] = w.decisions()
    return d


# --- Fairness across boards -------------------------------------------------------------


def busy_and_quiet(fairness):
    w = make_world(lane(agents=("agt_a", "agt_b"), boards=("brd_busy", "brd_quiet")), fairness=fairness)
    w.opt_in("brd_busy", "brd_quiet")
    for _ in range(5):
        w.suite.pipeline.add_card("brd_busy")
        w.advance(1)
    w.suite.pipeline.add_card("brd_quiet")
    return w


def test_round_robin_gives_the_quiet_board_a_free_agent_in_the_first_round():
    w = busy_and_quiet("round-robin")
    w.sweep()
    held = {d.board_id for d in w.decisions() if d.reserved_until}
    assert held == {"brd_busy", "brd_quiet"}


def test_board_order_lets_the_busy_board_take_every_free_agent():
    w = busy_and_quiet("board-order")
    w.sweep()
    held = [d.board_id for d in w.decisions() if d.reserved_until]
    assert held == ["brd_busy", "brd_busy"]


# --- The placement window ----------------------------------------------------------------


def test_a_refused_window_is_tried_again_after_five_minutes_and_the_board_is_still_swept():
    w = make_world(lane())
    w.opt_in("brd_a")
    real = w.suite.pipeline.set_placement_window
    w.suite.pipeline.set_placement_window = lambda *a: (_ for _ in ()).throw(
        Refused(403, "missing_scope", "dispatch:reserve needed")
    )
    w.suite.pipeline.add_card("brd_a")
    w.sweep()
    assert Board.objects.get().window_seconds is None
    assert len(w.decisions()) == 1  # swept meanwhile
    w.suite.pipeline.set_placement_window = real
    w.advance(240)
    w.sweep()
    assert Board.objects.get().window_seconds is None  # not yet five minutes
    w.advance(61)
    w.sweep()
    assert Board.objects.get().window_seconds == 10
    assert w.suite.pipeline.board("brd_a").placement_window_seconds == 10


def test_opting_out_sets_the_window_back_to_none():
    w = make_world(lane())
    w.opt_in("brd_a")
    w.sweep()
    do_opt_out("brd_a", w.now)
    w.sweep()
    assert w.suite.pipeline.board("brd_a").placement_window_seconds == 0
    assert Board.objects.get().window_seconds == 0


# --- History, the registry, the policy, the candidate set --------------------------------


def test_history_is_read_per_board_stage_and_weighs_in_the_ranking():
    w = make_world(lane())
    w.opt_in("brd_a")
    for i in range(4):
        w.suite.witness.record(
            "prn_c",
            "succeeded",
            "brd_a",
            "review",
            ended_at=w.now - timedelta(hours=i + 1),
            verdict={"decision": "approve"},
        )
    w.suite.pipeline.add_card("brd_a")
    w.sweep()
    [d] = w.decisions()
    assert d.chosen == "agt_c"
    c = d.candidate("agt_c")
    assert c.stage_history["runs"] == 4 and c.score["terms"]["stageRecord"] > 0.5


def test_superwitness_down_leaves_history_out_for_everyone():
    d = one_card_decided(make_world(lane()), superwitness_up=False)
    assert d.chosen == "agt_a"
    for c in d.candidates:
        assert c.stage_history is None and "stageRecord" not in c.score["terms"]


def test_station_needs_filter_on_the_registry_read_once_a_pass():
    d = one_card_decided(make_world(stations_lane()))
    assert filters_of(d, "agt_a")["isolation"]["reason"] == "isolation-too-weak"
    assert filters_of(d, "agt_c")["tools"] == {
        "filter": "tools",
        "passed": False,
        "reason": "tool-missing",
        "missing": ["git"],
    }
    assert d.chosen == "agt_b"


def test_min_proof_installed_does_not_count_a_declared_tool():
    d = one_card_decided(make_world(stations_lane(), min_proof="installed"))
    assert filters_of(d, "agt_b")["tools"]["reason"] == "tool-missing"
    assert d.reason == "none-eligible"


def test_agentpod_without_the_registry_leaves_station_needs_unchecked():
    d = one_card_decided(make_world(stations_lane()), station_registry=False)
    assert filters_of(d, "agt_a")["isolation"].get("unchecked") is True
    assert d.chosen == "agt_a"


def policy_lane(**policy):
    return lane(policy={"version": "pol_1", **policy})


def test_the_policy_denies_an_agent_and_is_recorded():
    denied = {"agentId": "agt_a", "effect": "deny", "reason": "not-this-one"}
    d = one_card_decided(make_world(policy_lane(rules=[denied]), policy="on"))
    assert filters_of(d, "agt_a")["policy"]["reason"] == "policy-denied"
    assert d.candidate("agt_a").policy["allow"] is False
    assert d.chosen == "agt_b"


def test_accounts_down_with_the_policy_on_fails_closed():
    w = make_world(policy_lane(rules=[]), policy="on")
    w.opt_in("brd_a")
    w.sweep()  # tokens for the products are cached now
    w.suite.toggles.accounts_up = False
    w.suite.pipeline.add_card("brd_a")
    w.sweep()
    [d] = w.decisions()
    assert d.reason == "none-eligible"
    assert filters_of(d, "agt_a")["policy"]["reason"] == "policy-unread"


@pytest.mark.parametrize("fault", ["slow", "down", "401"])
def test_accounts_failing_costs_a_pass_one_policy_question_not_one_an_agent(fault):
    """Slow past the client's timeout, every question costs its 5 s: a pass used to ask each
    agent in turn (nine on a roster: 45 s), and a relayed card's was cut short by its task's
    time limit, its card neither placed nor said why. One failed question is the pass's last."""
    w = make_world(policy_lane(rules=[]), policy="on")
    w.opt_in("brd_a")
    w.suite.pipeline.add_card("brd_a")
    w.sweep()  # a card decided: a token for each product is cached now
    w.suite.pipeline.add_card("brd_a")
    asked = []
    handle = w.suite.handle

    def counting(method, url, *args, **kwargs):
        if url.endswith("/api/policy/decide"):
            asked.append(url)
        return handle(method, url, *args, **kwargs)

    w.suite.handle = counting
    w.suite.toggles.faults["accounts"] = fault
    started = w.now
    w.sweep()
    assert len(w.decisions()) == 2 and len(asked) == 1
    assert (w.now - started).total_seconds() == (5 if fault == "slow" else 0)


def test_after_a_no_policy_answer_accounts_down_still_passes_everyone():
    w = make_world(lane(), policy="on")  # the workspace has no policy
    w.opt_in("brd_a")
    w.suite.pipeline.add_card("brd_a")
    w.sweep()
    w.suite.toggles.accounts_up = False
    w.suite.pipeline.add_card("brd_a")
    w.sweep()
    assert all(d.chosen for d in w.decisions())


def test_candidates_all_considers_agents_reporting_load_outside_the_roster():
    scenario = lane()
    scenario["agents"].append(
        {"id": "agt_z", "capabilities": ["code-review"], "boards": [{"board": "brd_a", "bridge": False}]}
    )
    d = one_card_decided(make_world(scenario, candidates="all"))
    z = d.candidate("agt_z")
    assert z.source == "direct" and z.in_set


# --- Documented rules, each pinned -------------------------------------------------------


def asked_of(w):
    """Every (method, url, query) the world's suite is asked from now on."""
    asked = []
    handle = w.suite.handle

    def recording(method, url, query=None, *args, **kwargs):
        split = urlsplit(url)
        asked.append((method, split.path, {**parse_qs(split.query), **(query or {})}))
        return handle(method, url, query, *args, **kwargs)

    w.suite.handle = recording
    return asked


def test_candidates_all_with_the_agents_load_unread_places_the_roster_alone_that_pass():
    scenario = lane()
    scenario["agents"].append(
        {"id": "agt_z", "capabilities": ["code-review"], "boards": [{"board": "brd_a", "bridge": False}]}
    )
    w = make_world(scenario, candidates="all")
    d = one_card_decided(w, agents_load_verb=False)  # GET /v1/agents/load answers 404
    assert {c.agent_id for c in d.candidates if c.in_set} == {"agt_a", "agt_b", "agt_c"}
    assert not d.candidate("agt_z").in_set and d.chosen in {"agt_a", "agt_b", "agt_c"}
    w.suite.toggles.agents_load_verb = True  # read again the next pass: agt_z is in the set
    w.advance(5)
    card = w.suite.pipeline.add_card("brd_a")
    w.sweep()
    [later] = w.decisions(card_id=card.id)
    assert later.candidate("agt_z").in_set


def test_station_filters_off_never_reads_the_registry():
    w = make_world(stations_lane(), station_filters="off")
    asked = asked_of(w)
    d = one_card_decided(w)
    assert asked and not any(path.endswith("/api/catalog/stations") for _, path, _ in asked)
    assert d.chosen == "agt_a"  # agt_a's host isolation would fail the stage's needs


def test_history_days_sets_how_far_back_the_runs_are_read():
    w = make_world(lane(), history_days="7")
    asked = asked_of(w)
    one_card_decided(w)
    [since] = {q["since"][0] for _, path, q in asked if path.endswith("/runs")}
    assert since == (w.now - timedelta(days=7)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
