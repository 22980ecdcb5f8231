"""How many of a board's ready cards a pass may weigh: no more than could be held now.

Each card weighed costs an eligibility read from SuperPipeline. A board with thousands of
ready cards and three idle agents can hold three of them this pass; the rest would only come
out `waiting-on-holds` or `waiting-on-load`, which are not recorded. So a pass weighs, in the
fair order, as many of a board's cards as it has agents that could take a hold now, and the
rest wait for the next pass without a read each.

Only cards whose decision is known to be a waiting one are left unread, so the bound changes
no decision: a card that nobody could take may still be recorded (`none-eligible` at the
winner step, `one-candidate`, `empty-lane`, a runner-up step with nobody left, a spent
ladder), and the docs say those are recorded. A card at the winner step is left unread when,
this pass, a card of the same board and stage at the winner step
* came out waiting: this card's facts are that card's (the same roster, load, capability
  and policy, and the same holds or more), so it waits too; or
* was held, and nobody could be held now: that card's agent now fails only for its hold,
  and every agent that could take this one holds a card already.
Until one of those is so, the card is weighed: a board with three idle agents and thousands
of ready cards costs three reads, and one whose agents are all busy costs one. Runner-up
steps and spent ladders are always weighed; they are the few cards whose holds lapsed.
"""
from __future__ import annotations

from typing import Callable

import placement
from placement.facts import AgentLoad, Ladder, RosterRow
from placement.ladder import WINNER, next_tier

HELD, WAITING = "held", "waiting"  # what weighing a card came to, as the bound reads it


def holdable(roster: tuple[RosterRow, ...], holding: frozenset[str],
             load: tuple[AgentLoad, ...] | None, formula: str) -> int:
    """Agents that could take a hold now: enabled, ready, idle and holding nothing of ours.

    Under a formula that may hold a card for a busy agent, a busy agent counts too.
    With candidates=all (`load` read), every idle workspace agent off the roster counts as well.
    """
    waits_for_busy = placement.formulas.named(formula).holds_busy
    agents = {row.agent_id for row in roster
              if row.enabled and row.ready and (waits_for_busy or not row.busy)}
    disabled = {row.agent_id for row in roster if not row.enabled}
    for agent in load or ():
        if agent.agent_id in disabled or agent.last_heartbeat_at is None:
            continue
        if waits_for_busy or agent.in_flight < (agent.capacity or 1):
            agents.add(agent.agent_id)
    return len(agents - holding)


class Backlog:
    """Per board stage, what its cards at the winner step came to this pass, and which cards
    were left unread for it."""

    def __init__(self) -> None:
        self._waited: set[tuple[str, str]] = set()  # (board, stage): a card came out waiting
        self._held: set[tuple[str, str]] = set()  # ... a card was held
        self._full: set[str] = set()  # boards with nobody left who could be held now
        self.held_back = 0

    def admits(self, board_id: str, stage_key: str, ladder: Ladder, rules: placement.Rules,
               holdable_now: Callable[[], int]) -> bool:
        """Whether the card may be weighed (`holdable_now`: who could be held, after the holds
        this pass has made so far)."""
        group = (board_id, stage_key)
        if next_tier(ladder, rules.top_k).name != WINNER:
            return True
        if group not in self._waited:
            if group not in self._held:
                return True
            if board_id not in self._full:
                if holdable_now() > 0:
                    return True
                self._full.add(board_id)  # holds only add up during a pass
        self.held_back += 1
        return False

    def weighed(self, board_id: str, stage_key: str, ladder: Ladder, rules: placement.Rules,
                came_to: str | None) -> None:
        """What weighing the card came to: HELD, WAITING, or anything else (recorded, unread)."""
        if next_tier(ladder, rules.top_k).name != WINNER:
            return
        if came_to == WAITING:
            self._waited.add((board_id, stage_key))
        elif came_to == HELD:
            self._held.add((board_id, stage_key))
