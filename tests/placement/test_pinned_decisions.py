"""4,000 seeded random fact sets, decided exactly as the build that wrote `pinned/decisions.txt`.

Each fact set is drawn from its own `random.Random(index)`, so any one can be rebuilt alone:
`fact_set(index)`. Each line of the file is the first 16 hex digits of the SHA-256 of one
decision's record (`to_record()`, and the hold and whether it is recorded) as JSON. Every
filter, reason code and why-nobody case is reached; a change to the order of filters, to any
verdict or score, or to the record's JSON fails here, naming the first fact set that differs.

To write the file again after a deliberate change of behaviour:
`SUPERDISPATCH_WRITE_PINNED=1 .venv/bin/python -m pytest tests/placement/test_pinned_decisions.py`.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from datetime import timedelta
from pathlib import Path

from placement import Rules, decide
from placement.facts import (
    AgentLoad,
    AgentVerdict,
    Facts,
    HoldLog,
    Ladder,
    PolicyFacts,
    PolicyVerdict,
    RegistryFact,
    Requires,
    RosterRow,
    Run,
    Station,
    StationNeeds,
)
from tests.support.placement import NOW, card

PINNED = Path(__file__).parent / "pinned" / "decisions.txt"
FACT_SETS = 4000

ELIGIBILITY_REASONS = ("capability_mismatch", "grant_denied", "concurrency_reached", "archived_card")
ISOLATIONS = ("host", "container", "sandbox")
PROOFS = ("declared", "installed", "probed")
MODELS = ("m-large", "m-small")
TOOLS = ("git", "rg", "make")
CREDENTIALS = ("GITHUB_TOKEN", "NPM_TOKEN")


def _ago(rng: random.Random, most_s: int) -> object:
    return NOW - timedelta(seconds=rng.randint(0, most_s))


def _station(rng: random.Random, station_id: str) -> Station:
    def facts(values: tuple[str, ...]) -> tuple[RegistryFact, ...]:
        return tuple(RegistryFact(v, rng.choice(PROOFS)) for v in values if rng.random() < 0.75)

    isolation = RegistryFact(rng.choice(ISOLATIONS), rng.choice(PROOFS)) if rng.random() < 0.9 else None
    return Station(
        station_id,
        isolation=isolation,
        models=facts(MODELS),
        tools=facts(TOOLS),
        credentials=facts(CREDENTIALS),
    )


def _needs(rng: random.Random) -> StationNeeds | None:
    roll = rng.random()
    if roll < 0.3:
        return None
    if roll < 0.4:
        return StationNeeds()  # states nothing: the station filters do not run
    return StationNeeds(
        isolation=rng.choice((None, *ISOLATIONS)),
        models=tuple(rng.sample(MODELS, rng.randint(0, 1))),
        tools=tuple(rng.sample(TOOLS, rng.randint(0, 2))),
        credentials=tuple(rng.sample(CREDENTIALS, rng.randint(0, 1))),
    )


def _policy_verdict(rng: random.Random) -> PolicyVerdict:
    roll = rng.random()
    if roll < 0.6:
        return PolicyVerdict(allow=True, reasons=("rule:reviewers",), policy_version="pol_1")
    if roll < 0.75:
        return PolicyVerdict(allow=False, reasons=("rule:no-docs",), policy_version="pol_1")
    limit = rng.randint(1, 3)
    reasons = rng.choice(((), ("limit:max-runs",), ("limit:max-runs", "rule:other")))
    return PolicyVerdict(
        allow=rng.random() < 0.5,
        reasons=reasons,
        policy_version="pol_2",
        limit_max_runs=limit,
        limit_window_hours=24.0,
        holds_in_window=rng.randint(0, 4),
    )


def fact_set(index: int) -> tuple[Facts, Rules]:
    """The index-th fact set and the rules it is decided under."""
    rng = random.Random(index)
    agents = sorted(rng.sample([f"agt_{i:02d}" for i in range(40)], rng.randint(0, 12)))
    rostered = [a for a in agents if rng.random() < 0.7]
    roster, eligibility, load, registry = [], [], [], []
    for agent_id in agents:
        name = agent_id[4:]
        principal = f"prn_{name}" if rng.random() < 0.95 else None
        if rng.random() < 0.9:
            reasons = tuple(r for r in ELIGIBILITY_REASONS if rng.random() < 0.08)
            eligible = not reasons if rng.random() < 0.95 else False
            eligibility.append(AgentVerdict(agent_id, principal, eligible, reasons))
        if agent_id in rostered:
            roster.append(
                RosterRow(
                    agent_id,
                    principal,
                    f"stn_{name}" if rng.random() < 0.9 else None,
                    enabled=rng.random() < 0.9,
                    ready=rng.random() < 0.85,
                    busy=rng.random() < 0.2,
                    last_took_work_at=_ago(rng, 86400) if rng.random() < 0.8 else None,
                    key=f"key-{name}",
                )
            )
            if rng.random() < 0.9:
                registry.append(_station(rng, f"stn_{name}"))
        elif rng.random() < 0.8:
            load.append(
                AgentLoad(
                    agent_id,
                    principal,
                    in_flight=rng.choice((0, 0, 1, 2)),
                    capacity=rng.choice((None, 1, 2)),
                    last_heartbeat_at=_ago(rng, 5400) if rng.random() < 0.9 else None,
                )
            )
    principals = sorted({f"prn_{a[4:]}" for a in agents})
    runs = (
        None
        if rng.random() < 0.3
        else {
            p: tuple(
                Run(p, rng.random() < 0.7, _ago(rng, 30 * 86400), mark=rng.choice((None, 0.0, 0.7, 1.0)))
                for _ in range(rng.randint(0, 6))
            )
            for p in principals
        }
    )
    policy = None
    if rng.random() < 0.4:
        policy = PolicyFacts(
            {a: _policy_verdict(rng) for a in agents if rng.random() < 0.85},
            last_answer_no_policy=rng.random() < 0.2,
        )
    # Lapses fall either side of the 30-minute window, some exactly on its edge.
    lapses = {
        a: tuple(
            NOW - timedelta(seconds=rng.choice((60, 600, 1799, 1800, 1801, 4000)))
            for _ in range(rng.randint(1, 3))
        )
        for a in agents
        if rng.random() < 0.25
    }
    step = rng.choice((0, 0, 0, 1, 2, 3))
    facts = Facts(
        card=card(
            needs=_needs(rng),
            requires=Requires(all=("code-review",)),
            ready_at=_ago(rng, 600),
            priority=rng.randint(0, 2),
        ),
        roster=tuple(roster),
        eligibility=tuple(eligibility),
        load=tuple(load) if rng.random() < 0.8 else None,
        registry=tuple(registry) if rng.random() < 0.85 else None,
        runs=runs,
        policy=policy,
        holds=HoldLog(
            holding=frozenset(a for a in agents if rng.random() < 0.15),
            lapses=lapses,
            settled={a: (c, c + rng.randint(0, 3)) for a in agents for c in [rng.randint(0, 3)]},
        ),
        ladder=Ladder(
            step=step,
            passed_over=frozenset(a for a in agents if step and rng.random() < 0.2),
            open=rng.random() < 0.03,
        ),
    )
    rules = Rules(
        candidates=rng.choice(("roster", "all")),
        top_k=rng.randint(1, 4),
        station_filters=rng.random() < 0.85,
        min_proof=rng.choice(PROOFS),
        no_show_count=rng.choice((2, 2, 2, 1)),
    )
    return facts, rules


def digest(facts: Facts, rules: Rules) -> str:
    decision = decide(facts, rules, NOW)
    hold = None if decision.hold is None else [decision.hold.agent_id, decision.hold.seconds]
    body = {"record": decision.to_record(), "hold": hold, "recorded": decision.record}
    encoded = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    return hashlib.sha256(encoded).hexdigest()[:16]


def test_4000_random_fact_sets_decide_exactly_as_pinned():
    digests = [digest(*fact_set(index)) for index in range(FACT_SETS)]
    if os.environ.get("SUPERDISPATCH_WRITE_PINNED") == "1":
        PINNED.parent.mkdir(exist_ok=True)
        PINNED.write_text("".join(d + "\n" for d in digests))
    pinned = PINNED.read_text().split()
    assert len(pinned) == FACT_SETS
    differing = [index for index, (got, want) in enumerate(zip(digests, pinned)) if got != want]
    assert not differing, (
        f"{len(differing)} of {FACT_SETS} decisions changed; the first is fact_set({differing[0]})"
    )


def test_the_fact_sets_reach_every_filter_and_every_outcome():
    """The pin is only as good as what it covers: every reason code and why-nobody case occurs."""
    codes, outcomes = set(), set()
    for index in range(FACT_SETS):
        decision = decide(*fact_set(index), NOW)
        outcomes.add("chosen" if decision.chosen else decision.reason)
        for candidate in decision.candidates:
            codes.update(result.reason for result in candidate.filters if not result.passed)
            codes.update(f"unchecked:{result.filter}" for result in candidate.filters if result.unchecked)
    assert {
        "not-on-roster",
        "capability-missing",
        "grant-denied",
        "not-claimable",
        "isolation-too-weak",
        "model-mismatch",
        "tool-missing",
        "credential-missing",
        "policy-denied",
        "no-principal",
        "policy-unread",
        "limit:max-runs",
        "unhealthy",
        "at-capacity",
        "not-idle",
        "holding-another",
        "recently-no-show",
        "passed-over",
        "unchecked:policy",
        "unchecked:isolation",
    } <= codes
    assert {
        "chosen",
        "no-candidates",
        "one-candidate",
        "none-eligible",
        "any-match",
        "waiting-on-holds",
        "waiting-on-load",
    } <= outcomes
