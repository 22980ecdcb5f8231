"""Small builders of placement facts: a rostered, eligible, idle agent unless told otherwise."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import Iterable

from placement import Rules, decide
from placement.facts import (
    AgentLoad,
    AgentVerdict,
    Card,
    Facts,
    HoldLog,
    PolicyFacts,
    PolicyVerdict,
    RegistryFact,
    Requires,
    RosterRow,
    Run,
    Station,
    StationNeeds,
)

NOW = datetime(2026, 11, 13, 10, 0, tzinfo=timezone.utc)


def ago(seconds: float = 0, *, minutes: float = 0, days: float = 0) -> datetime:
    return NOW - timedelta(seconds=seconds, minutes=minutes, days=days)


def _name(agent_id: str) -> str:
    return agent_id.removeprefix("agt_")


def card(needs: StationNeeds | None = None, **fields) -> Card:
    defaults = dict(
        board_id="brd_review",
        card_id="card_1042",
        stage_key="review",
        requires=Requires(all=("code-review",)),
        needs=needs,
        ready_at=ago(minutes=1),
    )
    return Card(**{**defaults, **fields})


def roster_row(agent_id: str, **fields) -> RosterRow:
    name = _name(agent_id)
    defaults = dict(
        agent_id=agent_id,
        principal_id=f"prn_{name}",
        station_id=f"stn_{name}",
        enabled=True,
        ready=True,
        busy=False,
        last_took_work_at=ago(minutes=10),
        key=f"key-{name}",
    )
    return RosterRow(**{**defaults, **fields})


def verdict(agent_id: str, *reasons: str, eligible: bool | None = None, **fields) -> AgentVerdict:
    defaults = dict(agent_id=agent_id, principal_id=f"prn_{_name(agent_id)}")
    return AgentVerdict(
        **{**defaults, **fields},
        eligible=not reasons if eligible is None else eligible,
        reasons=tuple(reasons),
    )


def load_row(agent_id: str, **fields) -> AgentLoad:
    defaults = dict(
        agent_id=agent_id,
        principal_id=f"prn_{_name(agent_id)}",
        in_flight=0,
        capacity=1,
        last_heartbeat_at=ago(minutes=5),
    )
    return AgentLoad(**{**defaults, **fields})


def fact(value: str, proof: str = "probed") -> RegistryFact:
    return RegistryFact(value, proof)


def station(
    station_id: str,
    *,
    isolation: str | None = "sandbox",
    models: Iterable[str] = ("m-large",),
    tools: Iterable[str] = ("git",),
    credentials: Iterable[str] = ("GITHUB_TOKEN",),
    proof: str = "probed",
) -> Station:
    return Station(
        station_id=station_id,
        isolation=fact(isolation, proof) if isolation else None,
        models=tuple(fact(m, proof) for m in models),
        tools=tuple(fact(t, proof) for t in tools),
        credentials=tuple(fact(c, proof) for c in credentials),
    )


def run(principal_id: str, succeeded: bool = True, *, age_days: float = 0, mark: float | None = None) -> Run:
    return Run(principal_id=principal_id, succeeded=succeeded, ended_at=ago(days=age_days), mark=mark)


def board(*agent_ids: str, **fields) -> Facts:
    """A card with every named agent rostered, enabled, idle and eligible."""
    agent_ids = agent_ids or ("agt_ada", "agt_bob")
    defaults = dict(
        card=card(),
        roster=tuple(roster_row(a) for a in agent_ids),
        eligibility=tuple(verdict(a) for a in agent_ids),
    )
    return Facts(**{**defaults, **fields})


def with_rows(
    facts: Facts, *, roster: Iterable[RosterRow] = (), eligibility: Iterable[AgentVerdict] = ()
) -> Facts:
    """The facts with these rows replacing the rows of the same agents (or added)."""
    roster, eligibility = tuple(roster), tuple(eligibility)
    replaced = {row.agent_id for row in roster}
    judged = {row.agent_id for row in eligibility}
    return replace(
        facts,
        roster=tuple(r for r in facts.roster if r.agent_id not in replaced) + roster,
        eligibility=tuple(v for v in facts.eligibility if v.agent_id not in judged) + eligibility,
    )


def decided(facts: Facts, **rules):
    """The decision on these facts at NOW, under the default rules changed by `rules`."""

    return decide(facts, Rules(**rules), NOW)


def every_kind_decided():
    """A decision with every kind of candidate: agt_ada chosen, with its stage history and the
    policy's verdict; agt_bob turned away by a station filter; agt_eli off the roster."""
    facts = with_rows(
        board(
            "agt_ada",
            "agt_bob",
            card=card(needs=StationNeeds(tools=("git",))),
            registry=(station("stn_ada"), station("stn_bob", tools=())),
            runs={"prn_ada": (run("prn_ada", mark=1.0),)},
            policy=PolicyFacts(
                verdicts={
                    "agt_ada": PolicyVerdict(True, ("no-policy",)),
                    "agt_bob": PolicyVerdict(True, ("no-policy",)),
                }
            ),
            holds=HoldLog(settled={"agt_ada": (2, 3)}),
        ),
        eligibility=[verdict("agt_eli", "grant_denied", principal_id="prn_eli")],
    )
    return decided(facts)


def failing(decision, agent_id: str) -> list[str]:
    """The reason codes of every filter the agent failed, in order."""
    return [result.reason for result in decision.candidate(agent_id).filters if not result.passed]
