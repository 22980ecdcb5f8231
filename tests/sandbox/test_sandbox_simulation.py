"""Simulated agents pull work by the claim rules; a scenario runs the same way for the same seed."""

import json
import threading

import pytest

from sandbox import (
    RealtimeDriver,
    ScenarioError,
    Simulation,
    Suite,
    load_scenario,
    parse_scenario,
    shipped_scenarios,
    system_clock,
)
from sandbox.scenario import SCENARIO_DIR
from tests.support.sandbox_world import World, small_scenario


def _run(name: str, seconds: float = 1800):
    suite = Suite.from_scenario(name)
    simulation = Simulation(suite)
    simulation.run(seconds)
    return suite, simulation


def test_the_same_seed_gives_the_same_claims():
    _, first = _run("demo")
    _, second = _run("demo")
    assert first.metrics.claims and first.metrics.claim_trace() == second.metrics.claim_trace()
    assert first.metrics.runs == second.metrics.runs


def test_another_seed_gives_other_claims():
    _, first = _run("demo")
    other = Suite(parse_scenario({**json.loads(_path("demo").read_text()), "seed": 8}))
    simulation = Simulation(other)
    simulation.run(1800)
    assert simulation.metrics.claim_trace() != first.metrics.claim_trace()


def _path(name):
    return SCENARIO_DIR / f"{name}.json"


def test_agents_claim_only_on_their_enabled_boards_within_their_capabilities():
    suite, simulation = _run("demo", 3600)
    scenario = suite.scenario
    boards = {a.id: {m.board_id for m in a.memberships if m.enabled} for a in scenario.agents}
    capabilities = {a.id: set(a.capabilities) for a in scenario.agents}
    owners = {(b.id, s.key): s.owner for b in scenario.boards for s in b.stages}
    for claim in simulation.metrics.claims:
        assert claim.board_id in boards[claim.agent_id]
        assert owners[(claim.board_id, claim.stage_key)] in capabilities[claim.agent_id]
    assert "agt_fay" not in {c.agent_id for c in simulation.metrics.claims if c.board_id == "brd_docs"}


def test_finished_work_leaves_superwitness_runs_by_principal():
    suite, simulation = _run("demo")
    statuses = {r.status for r in simulation.metrics.runs}
    assert {"succeeded", "failed"} <= statuses
    assert len(suite.witness.runs) == len(simulation.metrics.runs)
    run = suite.witness.runs[0]
    assert run.executor_id.startswith("prn_") and run.scope in {"brd_review", "brd_docs"}
    verdicts = {json.dumps(r.verdict) for r in suite.witness.runs if r.status == "succeeded"}
    assert verdicts == {'{"decision": "approve"}', '{"decision": "request_changes"}'}


def test_a_polling_agent_takes_a_card_within_its_interval_and_the_roster_shows_it_busy():
    world = World(small_scenario())
    simulation = Simulation(world.suite, arrivals=False)
    card = world.card()
    simulation.run(10)
    assert card.state == "working"
    claimer = card.delegate_agent_id
    _, roster = world.call("GET", "agentpod", "/api/bridge/boards/brd_r/roster")
    busy = {r["agentId"]: (r["busy"], r["lastTookWorkAt"] is not None) for r in roster["agents"]}
    assert busy == {agent_id: (agent_id == claimer,) * 2 for agent_id in ("agt_ada", "agt_bob")}


def test_a_hold_is_honoured_by_the_simulated_agents():
    world = World(small_scenario())
    simulation = Simulation(world.suite, arrivals=False)
    card = world.card(priority=0)
    world.card(priority=5)
    world.pipeline.reserve("brd_r", card.id, "agt_bob", 60)
    simulation.run(20)
    assert card.delegate_agent_id == "agt_bob"
    [claim] = [c for c in simulation.metrics.claims if c.card_id == card.id]
    assert claim.reserved


def test_a_no_show_agent_ignores_its_hold_and_others_take_the_card_after_it_lapses():
    data = json.loads(_path("busy-quiet").read_text())
    data["boards"] = [{"id": "brd_q", "stages": [{"key": "build"}]}]
    data["agents"] = [
        {"id": "agt_gone", "capabilities": ["build"], "noShow": 1, "boards": ["brd_q"]},
        {"id": "agt_here", "capabilities": ["build"], "boards": ["brd_q"]},
    ]
    suite = Suite(parse_scenario(data))
    simulation = Simulation(suite, arrivals=False)
    card = suite.pipeline.add_card("brd_q")
    suite.pipeline.reserve("brd_q", card.id, "agt_gone", 30)
    simulation.run(29)
    assert card.state == "submitted"
    assert [n.agent_id for n in simulation.metrics.no_shows] == ["agt_gone"]
    simulation.run(15)
    assert card.state == "working"


def test_arrivals_follow_the_rate_and_relay_card_ready():
    suite = Suite.from_scenario("busy-quiet")
    before = len(suite.pipeline._cards)
    Simulation(suite).run(600)
    arrived = len(suite.pipeline._cards) - before
    assert 15 <= arrived <= 50  # 3.3 a minute over ten minutes
    assert sum(d.event["type"] == "card.ready" for d in suite.relay.deliveries) >= arrived


def test_a_placement_window_delays_pull_by_its_length():
    world = World(small_scenario(placementWindowSeconds=20))
    simulation = Simulation(world.suite, arrivals=False)
    card = world.card()
    simulation.run(19)
    assert card.state == "submitted"
    simulation.run(10)
    assert card.state == "working"
    assert simulation.metrics.claims[0].wait_seconds >= 20


def test_a_station_that_is_not_ready_never_polls():
    data = {
        "boards": [{"id": "brd_q", "stages": [{"key": "build"}]}],
        "agents": [{"id": "agt_down", "capabilities": ["build"], "ready": False, "boards": ["brd_q"]}],
    }
    suite = Suite(parse_scenario(data))
    suite.pipeline.add_card("brd_q")
    simulation = Simulation(suite)
    simulation.run(60)
    assert simulation.metrics.claims == []


def test_metrics_summarise_waits_per_board():
    _, simulation = _run("busy-quiet", 1200)
    summary = simulation.metrics.summary()
    assert set(summary["boards"]) == {"brd_busy", "brd_quiet"}
    busy = summary["boards"]["brd_busy"]
    assert busy["count"] > 0 and 0 <= busy["waitP50"] <= busy["waitP95"] <= busy["waitMax"]
    assert summary["claims"]["count"] == sum(b["count"] for b in summary["boards"].values())
    assert summary["claims"]["reservedShare"] == 0  # pull only: nobody reserves


def test_the_relay_delivers_to_an_in_process_target_each_step():
    suite = Suite.from_scenario("demo")
    received = []
    suite.relay.target = lambda headers, body: received.append(json.loads(body)["type"])
    Simulation(suite).run(300)
    assert "card.ready" in received and "card.claimed" in received


def test_on_tick_is_called_after_every_step_with_the_time():
    suite = Suite.from_scenario("demo")
    ticks = []
    Simulation(suite).run(5, tick=1.0, on_tick=ticks.append)
    assert [t.second for t in ticks] == [1, 2, 3, 4, 5]


def test_run_needs_a_virtual_clock():
    with pytest.raises(TypeError):
        Simulation(Suite.from_scenario("demo", clock=system_clock)).run(1)


def test_the_realtime_driver_steps_until_stopped():
    suite = Suite.from_scenario("demo", clock=system_clock)
    stepped = threading.Event()
    driver = RealtimeDriver(Simulation(suite), tick=0.01, on_tick=lambda now: stepped.set())
    driver.start()
    try:
        assert stepped.wait(timeout=5)
    finally:
        driver.stop()


@pytest.mark.parametrize("name", shipped_scenarios())
def test_every_shipped_scenario_loads_and_runs(name):
    scenario = load_scenario(name)
    assert scenario.name == name and scenario.boards and scenario.agents
    if name != "large":
        _run(name, 120)


def test_the_shipped_scenarios_are_the_promised_ones():
    assert set(shipped_scenarios()) >= {"demo", "busy-quiet", "one-agent-lane", "no-station-lane", "large"}
    large = load_scenario("large")
    assert (len(large.boards), len(large.agents)) == (20, 200)


def test_one_agent_lane_has_one_rostered_agent_and_capable_agents_off_the_roster():
    suite = Suite.from_scenario("one-agent-lane")
    roster = suite.agentpod.roster_json("brd_lane")["agents"]
    triage = [r["agentId"] for r in roster if "triage" in suite.pipeline.agents[r["agentId"]].capabilities]
    assert triage == ["agt_solo"]
    card = suite.pipeline.add_card("brd_lane")
    capable = [
        a["agentId"] for a in suite.pipeline.eligibility_json("brd_lane", card.id)["agents"] if a["eligible"]
    ]
    assert len(capable) >= 3


def test_no_station_lane_states_a_placement_no_station_has():
    suite = Suite.from_scenario("no-station-lane")
    stage = suite.pipeline.boards["brd_ml"].stage("train")
    wanted_model = stage.placement["models"][0]
    models = {m["id"] for s in suite.agentpod.catalog_json()["stations"] for m in s["models"]}
    assert wanted_model not in models


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.pop("boards"), "boards: is required"),
        (lambda d: d["boards"][0].update(stages=[]), "boards[0].stages: must name at least one stage"),
        (
            lambda d: d["boards"][0]["stages"][0].update(ownerKind="robot"),
            "boards[0].stages[0].ownerKind: must be one of",
        ),
        (
            lambda d: d["agents"][0].update(successRate=1.5),
            "agents[0].successRate: must be a number from 0 to 1",
        ),
        (
            lambda d: d["agents"][0].update(boards=["brd_missing"]),
            "agents[0].boards[0]: unknown board 'brd_missing'",
        ),
        (lambda d: d["agents"].append(dict(d["agents"][0])), "agents: id 'agt_a' appears twice"),
        (
            lambda d: d["boards"][0].update(placementWindowSeconds=31),
            "placementWindowSeconds: must be a whole number",
        ),
        (
            lambda d: d["boards"][0]["stages"][0].update(placement={"isolation": "vm"}),
            "placement.isolation: must be one of",
        ),
        (lambda d: d.update(credentialScopes=["cards:write"]), "unknown scope 'cards:write'"),
    ],
)
def test_a_bad_scenario_is_refused_naming_the_field(change, message):
    data = {
        "boards": [{"id": "brd_q", "stages": [{"key": "build"}]}],
        "agents": [{"id": "agt_a", "capabilities": ["build"], "boards": ["brd_q"]}],
    }
    change(data)
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(data)
    assert message in str(refused.value)


def test_a_scenario_file_that_is_not_json_names_the_file(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text("{")
    with pytest.raises(ScenarioError, match="broken.json: not JSON"):
        load_scenario(bad)
    with pytest.raises(ScenarioError, match="no such scenario"):
        load_scenario("no-such-scenario")


@pytest.mark.parametrize("name", ["demo", "large", "one-agent-lane", "busy-quiet"])
def test_every_eligibility_read_gives_each_agent_the_reasons_a_claim_would_meet(name):
    """The read works out once what depends only on the agent, board and stage: every card
    of a running scenario (claimed, held, finished, waiting) must still read as `judged`
    says of each agent, one by one."""
    suite = Suite.from_scenario(name)
    simulation = Simulation(suite)
    pipeline = suite.pipeline
    checked = 0
    for _ in range(6):
        simulation.run(300)
        for board in pipeline.boards.values():
            cards = [*board.cards.values(), *board.finished.values()]
            for card in cards[:8]:
                answer = pipeline.eligibility_json(board.id, card.id)["agents"]
                expected = [
                    {
                        "agentId": a.id,
                        "principalId": a.principal_id,
                        "eligible": not pipeline.judged(a, card),
                        "reasons": pipeline.judged(a, card),
                    }
                    for a in pipeline.agents_by_id()
                ]
                assert answer == expected
                checked += 1
    assert checked > 20
