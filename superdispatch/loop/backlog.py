"""Which of a board's ready cards a pass need not decide: those its own read shows would wait.

A board with thousands of ready cards and three free agents can hold three of them this
pass; the rest come out `waiting-on-holds` or `waiting-on-load`, which are not recorded.
With the bound on, a pass still reads every card's eligibility, and leaves undecided a card
at the winner step whose own read says, of every agent its filters read (the candidate set:
the roster's, or with candidates=all the whole workspace's), what the read of a card of the
same board and stage said, this pass, when that card
* came out waiting: every other fact of this card is that card's (the roster, the load, the
  registry, SuperWitness's runs, the policy's verdicts, our lapses and settled holds, a fresh
  ladder, the stage's needs and requirement) but our holds, which have only grown since, and
  a hold only adds a load failure; so this card waits too; or
* was held, and nobody could be held now: the held agent now fails only for that hold, and
  every agent who could pass every filter holds a card already (`holdable`), so this card
  waits on holds.
So the bound changes no decision: any card whose read differs is decided, and every decision
the docs record (`none-eligible`, `one-candidate`, `empty-lane`, a runner-up step with
nobody left, a spent ladder) is made and recorded as it is with the bound off.

Why every card is read. Eligibility is SuperPipeline's verdict on one card, and each card
has its own grant: card B's may admit an idle agent card A's excludes (B is held), or refuse
the busy agent A waits for (B is `none-eligible`, recorded). Nothing else says what a card's
grant is: the board read names none, the contract ties grants to no board, stage or
principal, and the reason comes only as `grant_denied` in that card's own read. A card left
unread could be either, so no card is left unread; what the bound saves is deciding the cards
whose reads agree (on a workspace whose agents may work every board, every card of a stage
is read the very same verdicts), not their reads. The figures: docs/performance.md, the
backlog bound on a deep backlog (`bench/backlog.py`).
"""

from __future__ import annotations

from typing import Callable, Hashable, Sequence

import placement
from placement.candidates import verdicts_by_agent
from placement.facts import AgentLoad, Card, Ladder, RosterRow, Verdict
from placement.ladder import WINNER, next_tier
from placement.why_nobody import UNRECORDED, WAITING_ON_HOLDS

# What weighing a card came to, as the bound reads it: HELD, or for a card that waits, why it
# waits (`waiting-on-load` or `waiting-on-holds`, placement's UNRECORDED).
HELD = "held"


def holdable(
    roster: tuple[RosterRow, ...], holding: frozenset[str], load: tuple[AgentLoad, ...] | None, formula: str
) -> int:
    """Agents that could take a hold now: enabled, ready, idle and holding nothing of ours.

    Under a formula that may hold a card for a busy agent, a busy agent counts too.
    With candidates=all (`load` read), every idle workspace agent off the roster counts as well.
    Every agent that could pass every filter is counted (more may be: that only means fewer
    cards left undecided).
    """
    waits_for_busy = placement.formulas.named(formula).holds_busy
    agents = {
        row.agent_id for row in roster if row.enabled and row.ready and (waits_for_busy or not row.busy)
    }
    disabled = {row.agent_id for row in roster if not row.enabled}
    for agent in load or ():
        if agent.agent_id in disabled or agent.last_heartbeat_at is None:
            continue
        if waits_for_busy or agent.in_flight < (agent.capacity or 1):
            agents.add(agent.agent_id)
    return len(agents - holding)


def group_of(card: Card, ladder: Ladder, rules: placement.Rules, no_policy: bool | None) -> Hashable | None:
    """What a card at the winner step shares, in one pass, with the cards it may be judged by:
    its board and stage, the stage's requirement and needs, its (fresh) ladder, and what the
    policy's last answer said (a policy verdict left unread passes on it); None for a card at
    any other step, which is always decided."""
    if next_tier(ladder, rules.top_k).name != WINNER:
        return None
    return (card.board_id, card.stage_key, card.requires, card.needs, ladder, no_policy)


KEEP = 2  # reads remembered per group, of those that waited and of those held: alike reads need one
WHOLE = 8  # distinct whole reads (candidates=all) remembered a pass: each names every agent


class Backlog:
    """Per group (`group_of`), what the reads of its cards that waited or were held this pass
    said; how many cards were read and left undecided for it."""

    def __init__(self, rules: placement.Rules, no_policy: Callable[[], bool | None]) -> None:
        self.rules = rules
        self.no_policy = no_policy  # what the policy's last answer said (None: policy off)
        self._waited: dict[Hashable, list[Hashable]] = {}
        self._held: dict[Hashable, list[Hashable]] = {}
        self._why: dict[Hashable, list[str]] = {}  # why each read kept in `_waited` waited
        self._full: set[str] = set()  # boards with nobody left who could be held now
        self._whole: list[Sequence[Verdict]] = []  # the whole reads remembered
        self._last: tuple[Sequence[Verdict], frozenset[str], Hashable] | None = None
        self.held_back = 0

    def weigh(
        self,
        card: Card,
        ladder: Ladder,
        eligibility: Sequence[Verdict],
        considered: frozenset[str] | None,
        holdable_now: Callable[[], int],
        decide: Callable[[], str | None],
    ) -> str | None:
        """Decide the card (`decide`, which says what it came to) unless its read says it
        waits; then, why it waits. `considered`: the agents its filters read (None: anybody);
        `holdable_now`: who could be held, after the holds this pass has made so far."""
        group = group_of(card, ladder, self.rules, self.no_policy())
        if group is None:
            decide()
            return None
        said = self.said(eligibility, considered)
        why = self._waits(group, said, card.board_id, holdable_now)
        if why is not None:
            self.held_back += 1
            return why
        came_to = decide()
        # The group as the card's facts read it: deciding may have asked the policy.
        self._weighed(
            group_of(card, ladder, self.rules, self.no_policy()), said, came_to, whole=considered is None
        )
        return None

    def said(self, eligibility: Sequence[Verdict], considered: frozenset[str] | None) -> Hashable:
        """What a card's read says of the agents its filters read: the verdicts of `considered`
        (the roster's agents), or with candidates=all (None) the whole read. Reads alike are
        handed on as the very same tuple, so the last one's is kept."""
        if considered is None:
            return eligibility
        last = self._last
        if last is not None and last[0] is eligibility and last[1] is considered:
            return last[2]
        by_agent = verdicts_by_agent(eligibility)
        said = tuple(map(by_agent.get, sorted(considered)))
        self._last = (eligibility, considered, said)
        return said

    def _waits(
        self, group: Hashable, said: Hashable, board_id: str, holdable_now: Callable[[], int]
    ) -> str | None:
        """Why a card whose read is `said` waits, as a card read alike did; None: decide it."""
        for index, waited in enumerate(self._waited.get(group, ())):
            if said is waited or said == waited:
                return self._why[group][index]
        if not _among(said, self._held.get(group, ())):
            return None
        if board_id not in self._full:
            if holdable_now() > 0:
                return None
            self._full.add(board_id)  # holds only add up during a pass
        return WAITING_ON_HOLDS

    def _weighed(self, group: Hashable, said: Hashable, came_to: str | None, whole: bool) -> None:
        """Remember what a card that waited or was held read. `whole`: `said` is a whole read,
        of which a pass keeps a few (a read names every agent of the workspace, and what that
        holds is in docs/performance.md; alike reads are one tuple, so a few are enough)."""
        if came_to != HELD and came_to not in UNRECORDED:
            return
        kept = (self._held if came_to == HELD else self._waited).setdefault(group, [])
        if len(kept) >= KEEP or _among(said, kept):
            return
        if whole and not any(said is read for read in self._whole):
            if len(self._whole) >= WHOLE:
                return
            self._whole.append(said)  # type: ignore[arg-type]
        kept.append(said)
        if came_to != HELD:
            self._why.setdefault(group, []).append(came_to)


def _among(said: Hashable, kept: Sequence[Hashable]) -> bool:
    return any(said is other or said == other for other in kept)
