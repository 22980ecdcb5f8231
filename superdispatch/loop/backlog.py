"""How many of a board's ready cards a pass may weigh: no more than could be held now.

Each card weighed costs an eligibility read from SuperPipeline. A board with thousands of
ready cards and three idle agents can hold three of them this pass; the rest would only come
out `waiting-on-holds` or `waiting-on-load`, which are not recorded. So a pass weighs, in the
fair order, as many of a board's cards as it has agents that could take a hold now, and the
rest wait for the next pass without a read each.
"""
from __future__ import annotations

from typing import Callable

import placement
from placement.facts import AgentLoad, Ladder, RosterRow
from placement.ladder import ANY_MATCH, next_tier


def holdable(roster: tuple[RosterRow, ...], holding: frozenset[str],
             load: tuple[AgentLoad, ...] | None, formula: str) -> int:
    """Agents that could take a hold now: enabled, ready, idle and holding nothing of ours.

    The waiting formula may hold a card for a busy agent, so under it a busy agent counts too.
    With candidates=all (`load` read), every idle workspace agent off the roster counts as well.
    """
    waits_for_busy = formula != placement.POLICY
    agents = {row.agent_id for row in roster
              if row.enabled and row.ready and (waits_for_busy or not row.busy)}
    disabled = {row.agent_id for row in roster if not row.enabled}
    for agent in load or ():
        if agent.agent_id in disabled or agent.last_heartbeat_at is None:
            continue
        if waits_for_busy or agent.in_flight < (agent.capacity or 1):
            agents.add(agent.agent_id)
    return len(agents - holding)


def spent_ladder(ladder: Ladder, rules: placement.Rules) -> bool:
    """A card whose ladder has made its last hold: its next decision (`any-match`) holds nobody
    and is recorded whoever is idle, so the bound does not count or keep it."""
    return next_tier(ladder, rules.top_k).name == ANY_MATCH


class Backlog:
    """Per board, how many cards a pass has weighed, against what it may weigh."""

    def __init__(self) -> None:
        self._bound: dict[str, int] = {}
        self._weighed: dict[str, int] = {}
        self.held_back = 0

    def admits(self, board_id: str, bound: Callable[[], int]) -> bool:
        """Whether the board's next card may be weighed. The bound is taken when the board's
        first card comes up in the fair order, after the holds the boards before it made."""
        if board_id not in self._bound:
            self._bound[board_id] = bound()
        if self._weighed.get(board_id, 0) >= self._bound[board_id]:
            self.held_back += 1
            return False
        self._weighed[board_id] = self._weighed.get(board_id, 0) + 1
        return True
