"""Who made a claim the board read no longer shows: the relay's events and SuperWitness's runs.

A board read shows a claim (`claimedAt`, `delegateAgentId`) only while its run lasts. A claim
that came and went between two reads (a run that failed back to ready, or passed the card on
to another stage) is named, where anything names it, by:
- the relay's `card.claimed` or `card.advanced` for the card at the decision's stage, within
  its ladder (kept by the webhook, `RelayClaim`): SuperPipeline's own word, for any agent;
- SuperWitness's run at the decision's board stage by the held agent's principal, ended within
  the ladder. A run names its executor but no card, so it names the held agent alone: while
  its hold was live that agent could claim no card before the held one.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Callable, Mapping, NamedTuple

from placement.facts import Run
from records.models import Candidate, Decision, RelayClaim

EVENT_SLACK = timedelta(seconds=2)  # a card.advanced is stamped as the card moves on, or after
RUN_SLACK = timedelta(seconds=5)  # SuperWitness's clock against SuperPipeline's


class Found(NamedTuple):
    agent_id: str
    at: datetime  # the claim's time where its event gives it, else the latest it can have been
    exact: bool  # whether `at` is the claim's own time
    run: Run | None = None  # the held agent's run, where SuperWitness named the claimant


RunsAt = Callable[[str, str], Mapping[str, tuple[Run, ...]] | None]


class Claimants:
    """The claimant of a held decision's card, looked up only when the board read is silent.

    `runs` reads SuperWitness's runs at a board stage, by principal (the pass's own reads,
    `PassReads.runs`, each board stage once a pass), or is None without SuperWitness. The
    relay's events are looked at first: where the relay is on they name the claimant, and
    SuperWitness is not asked."""

    def __init__(self, runs: RunsAt | None = None) -> None:
        self.runs = runs

    def of(self, decision: Decision, until: datetime) -> Found | None:
        """Who claimed the decision's card in its ladder, by `until` (when the card left the
        ladder), or None when nothing names anybody."""
        found = self._relayed(decision, until)
        if found is not None or self.runs is None or decision.chosen is None:
            return found
        return self._run_of_held(decision, until)

    @staticmethod
    def _relayed(decision: Decision, until: datetime) -> Found | None:
        start = decision.ladder_ready_at or decision.created_at
        row = (RelayClaim.objects
               .filter(board_id=decision.board_id, card_id=decision.card_id,
                       stage_key=decision.stage_key, at__gte=start, at__lte=until + EVENT_SLACK)
               .order_by("at", "id").values_list("agent_id", "at", "kind").first())
        if row is None:
            return None
        agent_id, at, kind = row
        return Found(agent_id, min(at, until), kind == "card.claimed")

    def _run_of_held(self, decision: Decision, until: datetime) -> Found | None:
        principal = (Candidate.objects.filter(decision_id=decision.id, agent_id=decision.chosen)
                     .values_list("principal_id", flat=True).first())
        runs = self.runs(decision.board_id, decision.stage_key) if principal else None
        if not runs:
            return None  # no principal to look for, or SuperWitness unread
        for run in sorted(runs.get(principal, ()), key=lambda r: r.ended_at):
            if decision.created_at <= run.ended_at <= until + RUN_SLACK:
                return Found(decision.chosen, min(run.ended_at, until), False, run)
        return None
