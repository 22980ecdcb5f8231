"""What became of each claim: its run, from SuperWitness, joined to the decision once known.

SuperWitness names a run by its executor (a principal), its board (scope) and stage, and when
it ended; it names no card. An agent works one card at a time on a board, so the run of a
claim is the first run by the claimer's principal at that board stage to end after the claim,
and no later than the next claim our store knows it made there. A run that ended at the very
moment of a claim is the one before it: an agent that pulls its next card as soon as its run
ends claims it in the second that run ended, and a run takes time. A claim whose run has not
ended stays unknown and is looked for again each sweep, for `RUN_LOOK_BACK`; SuperWitness
down or slow leaves it unknown too, and nothing else in the pass waits on it.
"""

from __future__ import annotations

import bisect
import logging
from collections import defaultdict
from datetime import datetime
from typing import Mapping, NamedTuple

from placement.facts import RosterRow, Run
from records.models import Candidate
from records.store import holds
from records.store.actions.decisions import do_record_run
from superdispatch.loop.reads import PassReads

log = logging.getLogger("superdispatch.loop")


class Claim(NamedTuple):
    key: str  # the decision's id, or "" for a claim known only as a bound
    agent_id: str
    stage_key: str
    at: datetime


def match_runs(
    pending: list[Claim],
    known: list[Claim],
    principals: Mapping[str, str],
    runs: Mapping[str, tuple[Run, ...]],
) -> dict[str, Run]:
    """The run of each pending claim at one board stage, by decision id, where one has ended.

    `known` is every claim the store knows at that board stage from the oldest pending one on
    (the pending ones included): a run that ended after an agent's next claim belongs to that one.
    """
    next_claims: dict[str, list[datetime]] = defaultdict(list)
    for claim in known:
        next_claims[claim.agent_id].append(claim.at)
    for times in next_claims.values():
        times.sort()
    ended: dict[str, list[Run]] = {}
    found = {}
    for claim in pending:
        principal = principals.get(claim.agent_id)
        if principal is None:
            continue
        if principal not in ended:
            ended[principal] = sorted(runs.get(principal, ()), key=lambda r: r.ended_at)
        times = next_claims[claim.agent_id]
        later = times[bisect.bisect_right(times, claim.at) :]
        bound = later[0] if later else None
        for run in ended[principal]:
            if run.ended_at <= claim.at:
                continue
            if bound is None or run.ended_at <= bound:
                found[claim.key] = run
            break
    return found


def join_runs(reads: PassReads, board_id: str, roster: tuple[RosterRow, ...]) -> int:
    """Join the board's claimed decisions to their runs where SuperWitness has them; returns how many.
    Without SuperWitness (`SUPERWITNESS_URL` unset, the default) there is nothing to join them
    to, and the store is not asked."""
    if reads.loop.clients.superwitness is None:
        return 0
    pending = holds.claims_without_run(board_id, reads.now)
    if not pending:
        return 0
    principals = {row.agent_id: row.principal_id for row in roster if row.principal_id}
    unnamed = [d.id for d in pending if holds.claimer(d) not in principals]
    if unnamed:  # an agent off the roster (candidates=all): the principal its candidate row gave
        for agent_id, principal_id in Candidate.objects.filter(decision_id__in=unnamed).values_list(
            "agent_id", "principal_id"
        ):
            if principal_id:
                principals.setdefault(agent_id, principal_id)
    # An experiment's claims by whoever claimed its card bound the next claim's run too.
    experiments = any(d.outcome_status != "claimed" for d in pending)
    by_stage: dict[str, list[Claim]] = defaultdict(list)
    for d in pending:
        by_stage[d.stage_key].append(Claim(d.id, holds.claimer(d), d.stage_key, d.outcome_at))
    joined = 0
    for stage_key, claims in by_stage.items():
        runs = reads.runs(board_id, stage_key)
        if runs is None:
            continue  # SuperWitness unread (or not configured): known later, or never
        agents = {c.agent_id for c in claims}
        known = [
            Claim("", agent, stage, at)
            for agent, stage, at in holds.claims_of(board_id, agents, claims[0].at, experiments)
            if stage == stage_key
        ]
        for decision_id, run in match_runs(claims, known, principals, runs).items():
            status = "succeeded" if run.succeeded else "failed"
            if do_record_run(decision_id, status, run.mark, run.ended_at):
                joined += 1
                log.info("loop: %s %s run %s", board_id, decision_id, status)
    return joined
