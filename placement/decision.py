"""A placement decision: every candidate filtered, the eligible ranked by the formula's rankers,
and the card's next ladder step taken.

What a decision says is `decision_record.py`'s, every considered agent's record
`candidate_records.py`'s, and each ranker's run `rankers.py`'s.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Sequence

from .candidate_records import candidate_records
from .candidates import pool_for
from .decision_record import CandidateRecord, Decision, hold_for
from .facts import Facts
from .filtering import ground_for, run_filters
from .formulas import May
from .ladder import ANY_MATCH, RUNNER_UP, Tier, next_tier
from .lead import Outlook
from .rankers import RANKERS, Ranking, decision_outlook
from .rules import Rules
from .stage_runs import stage_records
from .waiting import Waiting
from .why_nobody import (
    EMPTY_LANE,
    NO_CANDIDATES,
    NONE_ELIGIBLE,
    ONE_CANDIDATE,
    PULL_ARM,
    PULL_AS_GOOD,
    UNRECORDED,
    waiting_reason,
)


def decide(facts: Facts, rules: Rules, now: datetime) -> Decision:
    """Filter every considered agent, rank the eligible, and take the card's next ladder step.

    Same facts in, same decision out, whatever order the rows arrive in.
    """
    decision = _decide(facts, rules, now)
    if rules.pull_arm and decision.formula_chose:
        return _under_pull(decision)
    return decision


def _under_pull(decision: Decision) -> Decision:
    """The board runs pull: the card the formula would hold, wait on or step aside for is held
    by nobody, and recorded, so that pull's outcome joins the record as the formula's would.
    A card nobody could be held for keeps its own reason: pull alone decides it in any arm."""
    return replace(decision, chosen=None, hold=None, waiting=None, reason=PULL_ARM, record=True)


def _decide(facts: Facts, rules: Rules, now: datetime) -> Decision:
    tier = next_tier(facts.ladder, rules.top_k)
    if facts.ladder.open:
        # Already open to any match: nothing to hold until a new ladder starts.
        return _decision(facts, Tier(ANY_MATCH, tier.step), (), None, ANY_MATCH, rules, record=False)

    pool = pool_for(facts, rules, now)
    ground = ground_for(facts, pool, rules, now)
    verdicts, eligible = run_filters(pool, ground)
    stage = None
    if facts.runs is not None:
        stage = stage_records(
            [pool.principals.get(agent_id) for agent_id in eligible],
            facts.runs,
            now,
            rules.history_min_sample,
            rules.history_half_life_days,
        )
    ranking: Ranking = []
    waiting = None
    formula = rules.declared_formula
    for ranker in formula.rankers:
        ranking, waiting = RANKERS[ranker].decide(
            facts, rules, tier, now, pool, verdicts, eligible, stage, ranking, waiting
        )
    candidates = candidate_records(pool, ground, verdicts, dict(ranking), stage)

    if tier.name == ANY_MATCH:
        return _decision(facts, tier, candidates, None, ANY_MATCH, rules)
    if not pool.ids:
        return _decision(facts, tier, candidates, None, NO_CANDIDATES, rules)
    rostered_capable = pool.rostered_capable
    lone = rostered_capable == 1 and bool(ranking) and May.HOLD_LONE in formula.may
    if rostered_capable < 2 and not lone:
        # No choice to make; say whether the lane has one agent to pull or nobody at all.
        reason = ONE_CANDIDATE if rostered_capable == 1 else EMPTY_LANE
        return _decision(facts, tier, candidates, None, reason, rules)
    if waiting is not None:
        return _decision(facts, tier, candidates, waiting.agent_id, None, rules, waiting=waiting)
    if ranking and May.STEP_ASIDE in formula.may:
        outlook = decision_outlook(facts, rules, tier, now, pool, verdicts, stage, ranking, lone)
        if outlook is not None and outlook.stepped_aside:
            return _decision(facts, tier, candidates, None, PULL_AS_GOOD, rules, outlook=outlook)
        return _decision(facts, tier, candidates, ranking[0][0], None, rules, outlook=outlook)
    if ranking:
        return _decision(facts, tier, candidates, ranking[0][0], None, rules)
    if tier.name == RUNNER_UP:
        # Nobody left to hold for: open the card to any match at once.
        return _decision(facts, Tier(ANY_MATCH, tier.step), candidates, None, ANY_MATCH, rules)
    in_set = (filters for agent_id, filters in verdicts.items() if agent_id in pool.in_set)
    return _decision(facts, tier, candidates, None, waiting_reason(in_set) or NONE_ELIGIBLE, rules)


def _decision(
    facts: Facts,
    tier: Tier,
    candidates: Sequence[CandidateRecord],
    chosen: str | None,
    reason: str | None,
    rules: Rules,
    record: bool = True,
    waiting: Waiting | None = None,
    outlook: Outlook | None = None,
) -> Decision:
    return Decision(
        card=facts.card,
        formula=rules.declared_formula.recorded,
        chosen=chosen,
        reason=reason,
        tier=tier,
        requires=facts.card.requires,
        candidates=candidates,
        hold=hold_for(facts.timing, tier, rules, chosen) if chosen is not None else None,
        record=record and reason not in UNRECORDED,
        waiting=waiting,
        outlook=outlook,
    )
