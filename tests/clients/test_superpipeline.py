"""SuperPipeline: the board read and its ready cards, eligibility, load, the hold, the window."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from placement.facts import AgentLoad, Card, Requires, StationNeeds
from superdispatch.clients import (
    Accounts,
    BadShape,
    Refusal,
    Refused,
    Reservation,
    SuperPipeline,
    Unavailable,
)
from superdispatch.clients.superpipeline_wire import EligibilityVerdict

from . import bodies
from .conftest import CREDENTIAL
from .server import Reply

BOARD = "/v1/boards/brd_1"
HOLD = "/v1/boards/brd_1/cards/card_1042/reservation"
WINDOW = "/v1/boards/brd_1/scheduling"
NOW = datetime(2026, 11, 13, 10, 4, 0, tzinfo=timezone.utc)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def read_board(suite, pipeline, stages=None, cards=None):
    suite.route("GET", BOARD, Reply(200, bodies.board(stages, cards)))
    return pipeline.board("brd_1")


def test_board_read_carries_every_card_field_with_the_token_for_superpipeline(suite, mint, pipeline):
    hold = {"agentId": "agt_ada", "reservedUntil": "2026-11-13T10:04:12.000Z"}
    board = read_board(
        suite,
        pipeline,
        cards=[
            bodies.card(
                delegateAgentId="agt_bo",
                priority=3,
                claimedAt="2026-11-13T10:03:30.000+00:00",
                reservation=hold,
                attemptCount=2,
            )
        ],
    )
    (card,) = board.cards
    assert (board.board_id, board.tenant_id, board.name) == ("brd_1", "tnt_1", "Review")
    assert (card.card_id, card.title, card.stage_key, card.state) == (
        "card_1042",
        "Fix the parser",
        "review",
        "submitted",
    )
    assert (card.delegate_agent_id, card.priority, card.attempt_count) == ("agt_bo", 3, 2)
    assert card.ready_at == at("2026-11-13T10:03:12+00:00")
    assert card.claimed_at == at("2026-11-13T10:03:30+00:00")
    assert card.archived_at is None
    assert card.reservation == Reservation("agt_ada", at("2026-11-13T10:04:12+00:00"))
    assert (card.created_at, card.updated_at) == (
        at("2026-11-13T10:00:00+00:00"),
        at("2026-11-13T10:03:12+00:00"),
    )
    assert mint.audience_of(suite.hits("GET", BOARD)[0]) == suite.url


def test_stage_requires_wins_over_owner_and_placement_becomes_needs(suite, pipeline):
    board = read_board(
        suite, pipeline, stages=[bodies.stage(requires={"all": ["code-review"], "any": ["py", "go"]})]
    )
    (stage,) = board.stages
    assert stage.requires == Requires(all=("code-review",), any=("py", "go"))
    assert stage.needs == StationNeeds(
        isolation="container", models=("m-large",), tools=("git",), credentials=("GITHUB_TOKEN",)
    )


@pytest.mark.parametrize("requires", [None, {"all": [], "any": []}, {}])
def test_empty_requires_falls_back_to_the_owner(suite, pipeline, requires):
    board = read_board(suite, pipeline, stages=[bodies.stage(requires=requires, placement=None)])
    assert board.stages[0].requires == Requires(all=("code-review",), any=())
    assert board.stages[0].needs is None


def test_ready_cards_are_submitted_unarchived_unheld_in_a_capability_lane(suite, pipeline):
    lapsed = {"agentId": "agt_ada", "reservedUntil": "2026-11-13T10:03:59.000Z"}
    live = {"agentId": "agt_ada", "reservedUntil": "2026-11-13T10:04:01.000Z"}
    board = read_board(
        suite,
        pipeline,
        stages=[bodies.stage(), bodies.stage(key="sign-off", ownerKind="human", owner="usr_1")],
        cards=[
            bodies.card(id="c_ready"),
            bodies.card(id="c_lapsed_hold", reservation=lapsed),
            bodies.card(id="c_live_hold", reservation=live),
            bodies.card(id="c_working", state="working"),
            bodies.card(id="c_archived", archivedAt="2026-11-13T10:03:50.000Z"),
            bodies.card(id="c_human_lane", currentStageKey="sign-off"),
            bodies.card(id="c_unknown_stage", currentStageKey="gone"),
        ],
    )
    assert [c.card_id for c in board.ready_cards(NOW)] == ["c_ready", "c_lapsed_hold"]


def test_ready_card_is_read_as_placement_reads_it(suite, pipeline):
    board = read_board(suite, pipeline, cards=[bodies.card(priority=5)])
    assert board.placement_cards(NOW) == (
        Card(
            board_id="brd_1",
            card_id="card_1042",
            stage_key="review",
            requires=Requires(all=("code-review",)),
            needs=StationNeeds("container", ("m-large",), ("git",), ("GITHUB_TOKEN",)),
            ready_at=at("2026-11-13T10:03:12+00:00"),
            priority=5,
        ),
    )


def test_card_missing_from_the_board_has_left_it(suite, pipeline):
    board = read_board(suite, pipeline)
    assert board.card("card_9") is None
    assert board.card("card_1042").title == "Fix the parser"


@pytest.mark.parametrize("body", bodies.bad_boards())
def test_board_not_in_the_documented_shape_is_bad_shape(suite, pipeline, body):
    suite.route("GET", BOARD, Reply(200, body))
    with pytest.raises(BadShape):
        pipeline.board("brd_1")


def test_eligibility_judges_every_agent(suite, pipeline):
    path = "/v1/boards/brd_1/cards/card_1042/eligibility"
    suite.route("GET", path, Reply(200, bodies.eligibility()))
    assert pipeline.eligibility("brd_1", "card_1042") == (
        EligibilityVerdict(agent_id="agt_ada", principal_id="prn_ada", eligible=True),
        EligibilityVerdict(
            agent_id="agt_cyd", principal_id="prn_cyd", eligible=False, reasons=("concurrency_reached",)
        ),
        EligibilityVerdict(
            agent_id="agt_eli", eligible=False, reasons=("capability_mismatch", "grant_denied")
        ),
    )


def test_eligibility_without_its_agents_is_bad_shape(suite, pipeline):
    path = "/v1/boards/brd_1/cards/card_1042/eligibility"
    suite.route("GET", path, Reply(200, {"cardId": "card_1042", "stageKey": "review"}))
    with pytest.raises(BadShape):
        pipeline.eligibility("brd_1", "card_1042")


def test_a_large_eligibility_answer_is_read_whole_and_the_connection_kept_for_the_next(suite, pipeline):
    """A workspace's answer (here 10,000 agents, about 790 KB) is read in one call."""
    path = "/v1/boards/brd_1/cards/card_1042/eligibility"
    agents = [
        {
            "agentId": f"agt_{i:05d}",
            "principalId": f"prn_{i:05d}",
            "eligible": i % 3 > 0,
            "reasons": [] if i % 3 else ["grant_denied"],
        }
        for i in range(10_000)
    ]
    suite.route("GET", path, Reply(200, {**bodies.eligibility(), "agents": agents}))
    first = pipeline.eligibility("brd_1", "card_1042")
    assert len(first) == 10_000 and first[1].eligible and first[3].reasons == ("grant_denied",)
    assert pipeline.eligibility("brd_1", "card_1042") == first


@pytest.mark.parametrize("stalls, code", [(False, "unreachable"), (True, "timeout")])
def test_an_eligibility_answer_cut_short_or_stalled_part_way_is_unavailable_and_the_next_is_read(
    suite, pipeline, stalls, code
):
    path = "/v1/boards/brd_1/cards/card_1042/eligibility"
    suite.route(
        "GET",
        path,
        Reply(200, bodies.eligibility(), cut_at=40, hold=stalls),
        Reply(200, bodies.eligibility()),
    )
    with pytest.raises(Unavailable) as failed:
        pipeline.eligibility("brd_1", "card_1042")
    assert failed.value.code == code
    suite.gate.set()
    assert [v.agent_id for v in pipeline.eligibility("brd_1", "card_1042")] == [
        "agt_ada",
        "agt_cyd",
        "agt_eli",
    ]


def test_agents_load_is_read(suite, pipeline):
    suite.route("GET", "/v1/agents/load", Reply(200, bodies.load()))
    assert pipeline.agents_load() == (
        AgentLoad("agt_ada", "prn_ada", 1, 2, at("2026-11-13T10:01:00+00:00")),
        AgentLoad("agt_bo", None, 0, None, None),
    )


def test_agents_load_with_a_wrong_type_is_bad_shape(suite, pipeline):
    body = bodies.load()
    body["agents"][0]["inFlight"] = 1.5
    suite.route("GET", "/v1/agents/load", Reply(200, body))
    with pytest.raises(BadShape):
        pipeline.agents_load()


def test_hold_is_asked_once_and_read(suite, pipeline):
    suite.route("PUT", HOLD, Reply(200, bodies.reservation("agt_ada")))
    held = pipeline.reserve("brd_1", "card_1042", "agt_ada", 60)
    assert held == Reservation("agt_ada", at("2026-11-13T10:04:12+00:00"))
    (asked,) = suite.hits("PUT", HOLD)
    assert asked.body == {"agentId": "agt_ada", "seconds": 60}


@pytest.mark.parametrize(
    "reply, refusal",
    [
        (Reply(404), Refusal("http-404", 404, transient=False)),
        (Reply(405, {}), Refusal("http-405", 405, transient=False)),
        (Reply(501), Refusal("http-501", 501, transient=False)),
        (
            Reply(200, {"error": {"code": "card-claimed", "message": "taken"}}),
            Refusal("card-claimed", 200, transient=False),
        ),
        (Reply(409, {"error": "agent-at-capacity"}), Refusal("agent-at-capacity", 409, False)),
        (Reply(503), Refusal("http-503", 503, transient=True)),
        # SuperPipeline's own answer never came back readable: the hold may exist.
        (Reply(504), Refusal("http-504", 504, transient=True, unknown=True)),
        (Reply(200, {"reservation": None}), Refusal("bad-shape", 200, transient=True, unknown=True)),
    ],
)
def test_refused_hold_is_a_refusal_value_sent_once(suite, pipeline, reply, refusal):
    suite.route("PUT", HOLD, reply, Reply(200, bodies.reservation()))
    assert pipeline.reserve("brd_1", "card_1042", "agt_ada", 60) == refusal
    assert len(suite.hits("PUT", HOLD)) == 1


def test_hold_that_times_out_is_unknown_not_refused(suite, mint, naps):
    accounts = Accounts(suite.url, CREDENTIAL, sleep=naps.append)
    quick = SuperPipeline(suite.url, accounts, timeout=(1.0, 0.1), sleep=naps.append)
    suite.route("PUT", HOLD, Reply(200, bodies.reservation(), hold=True))
    assert quick.reserve("brd_1", "card_1042", "agt_ada", 60) == Refusal(
        "timeout", None, transient=True, unknown=True
    )
    assert len(suite.hits("PUT", HOLD)) == 1


def test_hold_without_a_token_is_a_refusal_naming_the_token(suite, naps):
    suite.route("POST", "/api/token/service", Reply(403))
    pipeline = SuperPipeline(suite.url, Accounts(suite.url, CREDENTIAL, sleep=naps.append))
    assert pipeline.reserve("brd_1", "card_1042", "agt_ada", 60) == Refusal(
        "token-http-403", 403, transient=False
    )
    assert suite.hits("PUT", HOLD) == []


def test_hold_without_a_token_for_an_outage_was_never_asked_so_is_not_unknown(suite, naps):
    suite.route("POST", "/api/token/service", Reply(503), Reply(503), Reply(503))
    pipeline = SuperPipeline(suite.url, Accounts(suite.url, CREDENTIAL, sleep=naps.append))
    refusal = pipeline.reserve("brd_1", "card_1042", "agt_ada", 60)
    assert (refusal.code, refusal.transient, refusal.unknown) == ("token-http-503", True, False)
    assert suite.hits("PUT", HOLD) == []


@pytest.mark.parametrize("seconds", [0, 301])
def test_hold_outside_one_to_three_hundred_seconds_is_not_asked(suite, pipeline, seconds):
    with pytest.raises(ValueError):
        pipeline.reserve("brd_1", "card_1042", "agt_ada", seconds)
    assert suite.hits("PUT", HOLD) == []


def test_placement_window_is_set_and_read_back(suite, pipeline):
    suite.route("PUT", WINDOW, Reply(200, {"placementWindowSeconds": 0}))
    assert pipeline.set_placement_window("brd_1", 0) == 0
    assert suite.hits("PUT", WINDOW)[0].body == {"placementWindowSeconds": 0}


def test_placement_window_refused_raises(suite, pipeline):
    suite.route("PUT", WINDOW, Reply(404))
    with pytest.raises(Refused):
        pipeline.set_placement_window("brd_1", 10)


def test_placement_window_outage_raises_unavailable(suite, pipeline):
    suite.route("PUT", WINDOW, Reply(500))
    with pytest.raises(Unavailable):
        pipeline.set_placement_window("brd_1", 10)
