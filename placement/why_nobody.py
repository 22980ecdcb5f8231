"""Why a decision chose nobody, and when a card should wait for the next pass instead."""

from __future__ import annotations

from typing import Iterable

from .filtering import FilterResult, Tag, tables
from .ladder import ANY_MATCH

NO_CANDIDATES = "no-candidates"  # nobody was considered
EMPTY_LANE = "empty-lane"  # nobody on the roster has the capability: pull decides
ONE_CANDIDATE = "one-candidate"  # exactly one candidate on the roster: pull decides
NONE_ELIGIBLE = "none-eligible"  # at the winner step, every candidate failed a filter
# A formula that may step aside held nobody: pull is expected to do as well as the best hold.
# Not a failure, not a roster or supply signal, not a blocked lane.
PULL_AS_GOOD = "pull-as-good"
# The board runs pull (an experiment's pull block, or the board's own formula): the card is
# weighed and recorded, and nobody held, so that pull's outcome is measured on the same record
# as a formula's. Not a failure, not a roster or supply signal, not a blocked lane.
PULL_ARM = "pull-arm"
# An experiment's card claimed before SuperDispatch could weigh it (pull claimed it within the
# moment it became ready, or between two reads): recorded from the board read with its claimant
# and no candidates, so each arm counts every card that became ready in its blocks. Not a
# failure, not a roster or supply signal.
CLAIMED_FIRST = "claimed-first"
# ANY_MATCH: the tiers are spent, or a runner-up step has nobody left: pull decides
WAITING_ON_HOLDS = "waiting-on-holds"  # not recorded
WAITING_ON_LOAD = "waiting-on-load"  # not recorded

WHY_NOBODY = (
    NO_CANDIDATES,
    EMPTY_LANE,
    ONE_CANDIDATE,
    NONE_ELIGIBLE,
    ANY_MATCH,
    PULL_AS_GOOD,
    PULL_ARM,
    CLAIMED_FIRST,
    WAITING_ON_HOLDS,
    WAITING_ON_LOAD,
)
UNRECORDED = frozenset({WAITING_ON_HOLDS, WAITING_ON_LOAD})


def waiting_reason(verdicts: Iterable[tuple[FilterResult, ...]]) -> str | None:
    """Whether a card nobody is eligible for should wait for an agent to free up, and on what.

    `waiting-on-holds` when some otherwise free agent fails only because it holds another
    card (the filters tagged `hold`); else `waiting-on-load` when some agent fails only for
    its load (tagged `load`: `at-capacity`, `not-idle`, `holding-another`), or is also
    unwell (tagged `health`: `unhealthy`) while it has no room (tagged `no-room`). Holds win:
    a hold ends within its window, so that agent is the surest to be free by a later pass.
    """
    t = tables()
    load, no_room, holds, health = (
        t.names(Tag.LOAD),
        t.names(Tag.NO_ROOM),
        t.names(Tag.HOLD),
        t.names(Tag.HEALTH),
    )
    load_bound = False
    for filters in verdicts:
        failing = {result.filter for result in filters if not result.passed}
        if not failing:
            continue
        if failing <= holds:
            return WAITING_ON_HOLDS
        # Unhealthy counts as load only while the agent has no room: a busy station is not ready.
        if failing <= load or (failing & health and failing & no_room and failing <= load | health):
            load_bound = True
    return WAITING_ON_LOAD if load_bound else None
