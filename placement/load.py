"""The load shape the health and idle filters read, whichever source gave it."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from .facts import AgentLoad, RosterRow

ROSTER = "roster"
DIRECT = "direct"

# A direct agent counts as healthy when it was heard from on a run this recently.
HEARD_FROM_WITHIN = timedelta(hours=1)


class LoadShape(NamedTuple):
    """`{agentId, inFlight, capacity, healthy, lastSeenAt, source}` for one agent."""

    agent_id: str
    in_flight: int
    capacity: int
    healthy: bool
    last_seen_at: datetime | None
    source: str  # "roster" | "direct"

    @property
    def idle(self) -> bool:
        return self.in_flight < self.capacity


def roster_load(row: RosterRow) -> LoadShape:
    """A rostered station holds one card at a time: busy is full, and health is enabled and ready."""
    return LoadShape(
        row.agent_id, 1 if row.busy else 0, 1, row.enabled and row.ready, row.last_took_work_at, ROSTER
    )


def direct_load(row: AgentLoad, now: datetime) -> LoadShape:
    """An agent with its own token is healthy only if a run heartbeat came within the last hour.

    An agent never heard from is not healthy: nothing says it is there. A heartbeat exactly
    an hour old still counts.
    """
    heartbeat = row.last_heartbeat_at
    return LoadShape(
        row.agent_id,
        row.in_flight,
        1 if row.capacity is None else row.capacity,
        heartbeat is not None and now - heartbeat <= HEARD_FROM_WITHIN,
        heartbeat,
        DIRECT,
    )
