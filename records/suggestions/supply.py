"""Supply proposals: what a person could change when a lane goes unplaced for want of supply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from placement import filters
from placement.facts import ISOLATION_ORDER, Station, StationNeeds
from placement.stations import PROOF_RANK, lacking_by_agent
from records.models import SuggestionKind
from records.suggestions.found import Found
from records.suggestions.reading import (
    LOAD_BOUND,
    MODEL_ONLY,
    NO_CAPABILITY,
    SHORTFALL,
    LaneTally,
    Shortfall,
)
from records.suggestions.words import capability_words, counted, either, needs_words

MIN_EVIDENCE = 2  # decisions in the window that bear a kind out
SUPPLY_BITS = MODEL_ONLY | SHORTFALL | NO_CAPABILITY | LOAD_BOUND


@dataclass(frozen=True)
class Supply:
    """What the proposals read besides the decisions: the registry as last read, and its bar."""

    registry: tuple[Station, ...] | None  # None: unread
    min_proof: str

    @property
    def min_rank(self) -> int:
        return PROOF_RANK[self.min_proof]

    @property
    def registry_word(self) -> str:
        return "unread" if self.registry is None else "read"


def wants_supply(lane: LaneTally) -> bool:
    """Proposals are made only while the lane's newest decision chose nobody."""
    return lane.latest is not None and lane.latest.chosen is None and lane.count(SUPPLY_BITS) >= MIN_EVIDENCE


def supply_proposals(
    lane: LaneTally, requires: dict | None, shortfalls: list[Shortfall], supply: Supply
) -> list[Found]:
    """Every kind the lane's decisions bear out, at most one of each."""
    if not wants_supply(lane):
        return []
    if _own_station_has_it(shortfalls, supply):
        shortfalls = []  # the next decision will say
    proposals = []
    if shortfalls and lane.count(MODEL_ONLY) >= MIN_EVIDENCE:
        proposals += _change_model(lane, shortfalls, supply)
    host = None
    if shortfalls and lane.count(SHORTFALL) >= MIN_EVIDENCE and supply.registry is not None:
        host = _host(shortfalls, supply)
        if host is not None:
            proposals.append(_move_to_host(lane, shortfalls, host, supply))
    station_bits = SHORTFALL if shortfalls and host is None else 0
    if lane.count(NO_CAPABILITY | station_bits) >= MIN_EVIDENCE:
        proposals.append(_add_station(lane, requires, shortfalls if station_bits else [], supply))
    if lane.count(LOAD_BOUND) >= MIN_EVIDENCE:
        proposals.append(_raise_capacity(lane, requires, supply))
    return proposals


# --- What the stations lacked ----------------------------------------------------------------


def needs_of(lacked: dict) -> StationNeeds:
    """What a station lacked (by station filter), as needs: the isolation asked for, the
    models, tools, credentials."""
    isolation = lacked.get(filters.ISOLATION.name) or ()
    return StationNeeds(
        isolation=isolation[0] if isolation else None,
        models=tuple(lacked.get(filters.MODEL.name, ())),
        tools=tuple(lacked.get(filters.TOOLS.name, ())),
        credentials=tuple(lacked.get(filters.CREDENTIALS.name, ())),
    )


def merged_needs(shortfalls: Iterable[Shortfall]) -> StationNeeds:
    """All the lane's stations lacked: the strongest isolation, and every model, tool, credential."""
    isolation, models, tools, credentials = None, {}, {}, {}
    for shortfall in shortfalls:
        needs = needs_of(shortfall.lacked)
        if needs.isolation and (isolation is None or _stronger(needs.isolation, isolation)):
            isolation = needs.isolation
        models.update(dict.fromkeys(needs.models))
        tools.update(dict.fromkeys(needs.tools))
        credentials.update(dict.fromkeys(needs.credentials))
    return StationNeeds(isolation, tuple(models), tuple(tools), tuple(credentials))


def _stronger(a: str, b: str) -> bool:
    order = {level: rank for rank, level in enumerate(ISOLATION_ORDER)}
    return order.get(a, len(order)) > order.get(b, len(order))


def lacks_any(needs: StationNeeds, station: Station, min_rank: int) -> bool:
    """Whether the station lacks any of the needs, by placement's own station rule."""
    lacks = lacking_by_agent(needs, (station,), {"": station.station_id}, min_rank).get("")
    return lacks is not None and any(lacks)


def _own_station_has_it(shortfalls: list[Shortfall], supply: Supply) -> bool:
    """The registry says one of the lane's own stations has what it lacked, by now."""
    if supply.registry is None:
        return False
    stations = {station.station_id: station for station in supply.registry}
    return any(
        s.station_id in stations
        and not lacks_any(needs_of(s.lacked), stations[s.station_id], supply.min_rank)
        for s in shortfalls
    )


def _host(shortfalls: list[Shortfall], supply: Supply) -> Station | None:
    """Another station that has all the lane's stations lacked; an empty one first."""
    needs = merged_needs(shortfalls)
    own = {s.station_id for s in shortfalls}
    fits = [
        station
        for station in supply.registry or ()
        if station.station_id not in own and not lacks_any(needs, station, supply.min_rank)
    ]
    return min(fits, key=lambda s: (s.occupant is not None, s.station_id), default=None)


# --- The kinds --------------------------------------------------------------------------------


def _proposal(
    kind: str,
    lane: LaneTally,
    bits: int,
    supply: Supply,
    *,
    rationale: str,
    target: dict | None,
    agents: int,
    summary: str,
    how: str,
) -> Found:
    return Found.on(
        kind,
        lane,
        bits,
        {
            "rationale": rationale,
            "target": target,
            "estimated_effect": {"cards": lane.card_count(bits), "agents": agents, "summary": summary},
            "how_to_apply": how,
            "registry": supply.registry_word,
        },
    )


def _lane(lane: LaneTally) -> str:
    return f"{lane.stage_key} on {lane.board_id}"


def _unplaced(lane: LaneTally, bits: int) -> str:
    return f"{counted(lane.card_count(bits), 'card')} at {lane.stage_key}"


def _change_model(lane: LaneTally, shortfalls: list[Shortfall], supply: Supply) -> list[Found]:
    only_model = [s for s in shortfalls if set(s.lacked) == {filters.MODEL.name} and s.station_id]
    if not only_model:
        return []
    s = only_model[0]
    models = s.lacked[filters.MODEL.name]
    model = models[0] if models else None
    return [
        _proposal(
            SuggestionKind.CHANGE_MODEL,
            lane,
            MODEL_ONLY,
            supply,
            rationale=(
                f"In {counted(lane.count(MODEL_ONLY), 'decision')} at {_lane(lane)} in which nobody "
                f"was eligible, an agent on the roster was turned away only for its model: "
                f"{s.agent_id}'s station {s.station_id} runs none of "
                f"{either(models or ['the models asked for'])}."
            ),
            target={"agentId": s.agent_id, "stationId": s.station_id, "model": model},
            agents=1,
            summary=(
                f"{s.agent_id} could take the {_unplaced(lane, MODEL_ONLY)} that went unplaced "
                f"for want of {model}."
            ),
            how=(
                f"In AgentPod, declare model {model} for station {s.station_id} in its declared "
                f"harness configuration."
            ),
        )
    ]


def _move_to_host(lane: LaneTally, shortfalls: list[Shortfall], host: Station, supply: Supply) -> Found:
    needs = merged_needs(shortfalls)
    agent = shortfalls[0].agent_id
    isolation = host.isolation.value if host.isolation else None
    counted_models = [fact.value for fact in host.models if PROOF_RANK.get(fact.proof, -1) >= supply.min_rank]
    model = next(
        (m for m in needs.models if m in counted_models), counted_models[0] if counted_models else None
    )
    if host.occupant is None:
        how = f"In AgentPod, put {agent} in the empty station {host.station_id}."
        taker = agent
    else:
        how = (
            f"In AgentPod, put {agent} in station {host.station_id}, or add its agent "
            f"{host.occupant} to the roster of {lane.board_id}."
        )
        taker = f"{agent} or {host.occupant}"
    return _proposal(
        SuggestionKind.MOVE_TO_HOST,
        lane,
        SHORTFALL,
        supply,
        rationale=(
            f"In {counted(lane.count(SHORTFALL), 'decision')} at {_lane(lane)} in which "
            f"nobody was eligible, agents on the roster were turned away only by their "
            f"stations, which lacked {needs_words(needs)}; the registry says station "
            f"{host.station_id} has all of it."
        ),
        target={
            "stationId": host.station_id,
            "occupant": host.occupant,
            "runtime": host.runtime,
            "harness": host.harness,
            "isolation": isolation,
            "model": model,
        },
        agents=1,
        summary=(
            f"{taker} in {host.station_id} could take the {_unplaced(lane, SHORTFALL)} that went unplaced."
        ),
        how=how,
    )


def _add_station(
    lane: LaneTally, requires: dict | None, shortfalls: list[Shortfall], supply: Supply
) -> Found:
    capability = capability_words(requires)
    needs = merged_needs(shortfalls)
    bits = NO_CAPABILITY | (SHORTFALL if shortfalls else 0)
    why = []
    if lane.count(NO_CAPABILITY):
        why.append(f"nobody on the roster or in the workspace has {capability}")
    if shortfalls:
        where = (
            "the registry was not read"
            if supply.registry is None
            else "no station in the registry has all of it"
        )
        why.append(f"the stations of agents on the roster lacked {needs_words(needs)}, and {where}")
    wanted = f"{capability}" + (f" and {needs_words(needs)}" if shortfalls else "")
    return _proposal(
        SuggestionKind.ADD_STATION,
        lane,
        bits,
        supply,
        rationale=(
            f"In {counted(lane.count(bits), 'decision')} at {_lane(lane)} in which nobody "
            f"was eligible, {'; and '.join(why)}."
        ),
        target={
            "capability": requires,
            "isolation": needs.isolation,
            "models": list(needs.models),
            "tools": list(needs.tools),
            "credentials": list(needs.credentials),
        },
        agents=1,
        summary=f"One more agent could take the {_unplaced(lane, bits)} that nobody could take.",
        how=(
            f"In AgentPod, set up a runtime, then a station with {wanted}, and add its agent "
            f"to the roster of {lane.board_id}."
        ),
    )


def _raise_capacity(lane: LaneTally, requires: dict | None, supply: Supply) -> Found:
    agents = lane.at_capacity
    return _proposal(
        SuggestionKind.RAISE_CAPACITY,
        lane,
        LOAD_BOUND,
        supply,
        rationale=(
            f"In {counted(lane.count(LOAD_BOUND), 'decision')} at {_lane(lane)} that chose "
            f"nobody, every agent on the roster with {capability_words(requires)} was "
            f"turned away for its load alone, at least one at the board's concurrency."
        ),
        target=None,
        agents=agents,
        summary=(
            f"{counted(agents, 'agent')} at capacity could take the "
            f"{_unplaced(lane, LOAD_BOUND)} that went unplaced."
        ),
        how=f"In SuperPipeline, raise the agent concurrency of board {lane.board_id}.",
    )
