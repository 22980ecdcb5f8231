"""Who made a claim the board read no longer shows: the relay's events and SuperWitness's runs.

A board read shows a claim (`claimedAt`, `delegateAgentId`) only while its run lasts. A claim
that came and went between two reads (a run that failed back to ready, or passed the card on
to another stage) is named, where anything names it, by:
- the relay's `card.claimed` or `card.advanced` for the card at the decision's stage, within
  its ladder (kept by the webhook, `RelayClaim`): SuperPipeline's own word, for any agent;
- SuperWitness's run at the decision's board stage by the held agent's principal, ended within
  the ladder. A run names its executor but no card, so it names the held agent alone: while
  its hold was live that agent could claim no card before the held one.

A card nobody was held for (any decision without a hold: `one-candidate`, `any-match`,
`pull-as-good` and the rest) may have been claimed by anyone, so a run names its claimant in
one narrow case only: a `one-candidate` decision, whose lane has one rostered agent, that
agent's run at the stage ended within the card's ladder, and no other card of the lane left
it meanwhile (`lane_quiet`). Otherwise only the relay's event names the claimant.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Callable, Mapping, NamedTuple

from placement.facts import Run
from placement.filters import CAPABILITY
from placement.why_nobody import ONE_CANDIDATE
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
    """The claimant of a decision's card, looked up only when the board read is silent.

    `runs` reads SuperWitness's runs at a board stage, by principal (the pass's own reads,
    `PassReads.runs`, each board stage once a pass), or is None without SuperWitness. The
    relay's events are looked at first: where the relay is on they name the claimant, and
    SuperWitness is not asked."""

    def __init__(self, runs: RunsAt | None = None) -> None:
        self.runs = runs

    def of(
        self, decision: Decision, until: datetime, lane_quiet: Callable[[datetime], bool] | None = None
    ) -> Found | None:
        """Who claimed the decision's card in its ladder, by `until` (when the card left the
        ladder), or None when nothing names anybody. `lane_quiet(until)` says whether no other
        card of the decision's lane left it during the card's ladder; it is asked only where a
        run could name the claimant of a card nobody was held for."""
        found = self._relayed(decision, until)
        if found is not None or self.runs is None:
            return found
        if decision.reserved_until is not None:  # held, or perhaps held (an unknown hold)
            return self._run_of(decision, decision.chosen, until) if decision.chosen else None
        if decision.reason != ONE_CANDIDATE or lane_quiet is None:
            return None  # anyone may have claimed it: a run names nobody
        lone = self._lone_agent(decision)
        if lone is None:
            return None
        found = self._run_of(decision, lone, until)
        return found if found is not None and lane_quiet(until) else None

    @staticmethod
    def _relayed(decision: Decision, until: datetime) -> Found | None:
        start = decision.ladder_ready_at or decision.created_at
        row = (
            RelayClaim.objects.filter(
                board_id=decision.board_id,
                card_id=decision.card_id,
                stage_key=decision.stage_key,
                at__gte=start,
                at__lte=until + EVENT_SLACK,
            )
            .order_by("at", "id")
            .values_list("agent_id", "at", "kind")
            .first()
        )
        if row is None:
            return None
        agent_id, at, kind = row
        return Found(agent_id, min(at, until), kind == "card.claimed")

    @staticmethod
    def _lone_agent(decision: Decision) -> str | None:
        """The one agent on the roster, in the candidate set, with the stage's capability, as
        the `one-candidate` decision recorded it; None when its candidates name no such one."""
        agents = list(
            Candidate.objects.filter(decision_id=decision.id, source="roster", in_set=True)
            .exclude(reasons__contains=f",{CAPABILITY.reason},")
            .values_list("agent_id", flat=True)[:2]
        )
        return agents[0] if len(agents) == 1 else None

    def _run_of(self, decision: Decision, agent_id: str, until: datetime) -> Found | None:
        """The first run by the agent's principal at the decision's board stage that ended
        within the card's ladder, as a claim by that agent."""
        principal = (
            Candidate.objects.filter(decision_id=decision.id, agent_id=agent_id)
            .values_list("principal_id", flat=True)
            .first()
        )
        runs = self.runs(decision.board_id, decision.stage_key) if principal else None
        if not runs:
            return None  # no principal to look for, or SuperWitness unread
        for run in sorted(runs.get(principal, ()), key=lambda r: r.ended_at):
            if decision.created_at <= run.ended_at <= until + RUN_SLACK:
                return Found(agent_id, min(run.ended_at, until), False, run)
        return None
