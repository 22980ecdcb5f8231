"""Time `placement.decide` on one card with 10, 100 and 1,000 candidates, every filter on.

The stage states station needs and the registry was read, the runs were read (about five
per principal), the dispatch policy is on, and the candidate set is `all` with load: half
the agents are rostered, half report their own load. Most are eligible; the rest fail a
realistic mix of filters. Goal on one core: 2,000 decisions/s at 100, 200/s at 1,000.

Time is this process's CPU time, so other work on a shared machine does not count against
placement. The loop hands every card of a pass the very same registry, runs and agents'
load, and every card of a board the very same roster, so placement works out what they say
once a pass; the first card of a pass pays for that, and is timed on its own with freshly
read copies of all four (`first_card_per_s`).
With `--switchback`, the switchback experiment's own cost instead: `in_force` (which block and
arm a board runs, once a board a pass) over a 12-hour schedule of 30-minute blocks and over a
week of them, one arm dropped, in µs per call; and `analyse` (the guardrail's look after each
block) over a 12-hour experiment's cards, in ms.
Run: .venv/bin/python bench/placement.py [--switchback]
"""

from __future__ import annotations

import os
import random
import sys
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._results import last_line  # noqa: E402
from placement import Rules, decide  # noqa: E402
from placement.facts import (  # noqa: E402
    AgentLoad,
    AgentVerdict,
    Card,
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
from placement.switchback import (  # noqa: E402
    PULL,
    Card as ExperimentCard,
    analyse,
    draw_schedule,
    in_force,
)

NOW = datetime(2026, 11, 13, 10, 0, tzinfo=timezone.utc)
RULES = Rules(candidates="all")
NEEDS = StationNeeds(
    isolation="container", models=("m-large", "m-small"), tools=("git", "rg"), credentials=("GITHUB_TOKEN",)
)


def facts_with(n: int, seed: int = 7) -> Facts:
    rng = random.Random(seed)
    agents = [f"agt_{i:05d}" for i in range(n)]
    rostered = agents[: max(2, n // 2)]
    roster, load, registry, verdicts, runs, policy = [], [], [], [], {}, {}
    for agent_id in agents:
        principal = "prn_" + agent_id[4:]
        reasons: tuple[str, ...] = ()
        roll = rng.random()
        if roll < 0.05:
            reasons = ("grant_denied",)
        elif roll < 0.08:
            reasons = ("concurrency_reached",)
        verdicts.append(AgentVerdict(agent_id, principal, eligible=not reasons, reasons=reasons))
        if agent_id in rostered:
            station_id = "stn_" + agent_id[4:]
            roster.append(
                RosterRow(
                    agent_id,
                    principal,
                    station_id,
                    enabled=True,
                    ready=True,
                    busy=rng.random() < 0.1,
                    last_took_work_at=NOW - timedelta(seconds=rng.randint(0, 86400)),
                    key="key-" + agent_id[4:],
                )
            )
            proof = rng.choice(("declared", "installed", "probed"))
            registry.append(
                Station(
                    station_id,
                    isolation=RegistryFact("sandbox", proof),
                    models=(RegistryFact("m-large", proof),),
                    tools=(RegistryFact("git", proof),)
                    + ((RegistryFact("rg", proof),) if rng.random() < 0.9 else ()),
                    credentials=(RegistryFact("GITHUB_TOKEN", proof),),
                )
            )
        else:
            load.append(
                AgentLoad(
                    agent_id,
                    principal,
                    in_flight=rng.choice((0, 0, 0, 1)),
                    capacity=2,
                    last_heartbeat_at=NOW - timedelta(minutes=rng.randint(0, 70)),
                )
            )
        runs[principal] = tuple(
            Run(
                principal,
                rng.random() < 0.8,
                NOW - timedelta(days=rng.random() * 30),
                mark=rng.choice((None, 0.0, 1.0, 0.8)),
            )
            for _ in range(rng.randint(3, 7))
        )
        policy[agent_id] = PolicyVerdict(
            allow=rng.random() < 0.97, reasons=("rule:reviewers",), policy_version="pol_1"
        )
    card = Card(
        "brd_review",
        "card_1",
        "review",
        Requires(all=("code-review",)),
        NEEDS,
        ready_at=NOW - timedelta(minutes=1),
    )
    return Facts(
        card=card,
        roster=tuple(roster),
        eligibility=tuple(verdicts),
        load=tuple(load),
        registry=tuple(registry),
        runs=runs,
        policy=PolicyFacts(policy),
        holds=HoldLog(
            holding=frozenset(rng.sample(agents, n // 20)),
            lapses={
                a: (NOW - timedelta(minutes=5), NOW - timedelta(minutes=20))
                for a in rng.sample(agents, n // 25)
            },
            settled={a: (rng.randint(0, 5), 5) for a in agents},
        ),
        ladder=Ladder(step=1, passed_over=frozenset(rng.sample(agents, 1))),
    )


def decisions_per_s(n: int, budget_s: float = 2.0) -> tuple[float, int, str]:
    facts = facts_with(n)
    decision = decide(facts, RULES, NOW)  # warm up, and say what it decided
    eligible = sum(1 for c in decision.candidates if c.eligible)
    count, started = 0, time.process_time()
    while (elapsed := time.process_time() - started) < budget_s:
        for _ in range(10):
            decide(facts, RULES, NOW)
        count += 10
    return count / elapsed, eligible, decision.chosen or decision.reason or ""


def first_cards_per_s(n: int, budget_s: float = 1.0) -> float:
    """Each decision reads a roster, load, registry and runs as freshly read, as the first card
    of a pass does."""
    facts = facts_with(n)
    count, spent = 0, 0.0
    while spent < budget_s:
        fresh = replace(
            facts,
            roster=tuple(list(facts.roster)),
            load=tuple(list(facts.load)),
            registry=tuple(list(facts.registry)),
            runs={principal: tuple(list(runs)) for principal, runs in facts.runs.items()},
        )
        started = time.process_time()
        decide(fresh, RULES, NOW)
        spent += time.process_time() - started
        count += 1
    return count / spent


def per_call_s(call, budget_s: float) -> float:
    count, started = 0, time.process_time()
    while (elapsed := time.process_time() - started) < budget_s:
        for _ in range(10):
            call()
        count += 10
    return elapsed / count


def switchback_costs() -> None:

    # Four arms, pull among them, as the lab runs; what a look costs does not hang on their names.
    arms = [PULL, "arm-b", "arm-c", "arm-d"]
    rng = random.Random(5)
    figures = {}
    for name, blocks in (("12h", 24), ("week", 336)):
        schedule = draw_schedule(arms, starts=NOW, block_seconds=1800, blocks=blocks, seed=3)
        moments = [NOW + timedelta(seconds=rng.uniform(0, blocks * 1800)) for _ in range(100)]
        figures[name] = per_call_s(lambda: [in_force(schedule, m, ("arm-d",)) for m in moments], 1.0) / 100
        print(f"in_force over {blocks} blocks: {figures[name] * 1e6:.1f} us a call")
    schedule = draw_schedule(arms, starts=NOW, block_seconds=1800, blocks=24, seed=3)
    cards = [
        ExperimentCard(
            NOW + timedelta(seconds=rng.uniform(0, 24 * 1800)),
            ok := rng.random() < 0.8,
            rng.uniform(60, 400) if ok else None,
            rng.uniform(0, 60),
        )
        for _ in range(24 * 60)
    ]
    look = per_call_s(lambda: analyse(schedule, cards, burn_in_s=300, objective="success"), 2.0)
    print(f"analyse over 24 blocks, {len(cards)} cards: {look * 1e3:.1f} ms a look")
    last_line(
        f"switchback_in_force_us={figures['12h'] * 1e6:.1f} switchback_in_force_week_us="
        f"{figures['week'] * 1e6:.1f} switchback_analyse_ms={look * 1e3:.1f}",
        variant="switchback",
    )


def main() -> None:
    if "--switchback" in sys.argv[1:]:
        switchback_costs()
        return
    rates = {}
    for n in (10, 100, 1000):
        rate, eligible, outcome = decisions_per_s(n)
        rates[n] = rate
        print(
            f"candidates={n} eligible={eligible} decided={outcome} decisions_per_s={rate:.0f} "
            f"ms_per_decision={1000 / rate:.3f} first_card_per_s={first_cards_per_s(n):.0f}"
        )
    last_line(f"decisions_per_s_100={rates[100]:.0f} decisions_per_s_1000={rates[1000]:.0f}")


if __name__ == "__main__":
    main()
