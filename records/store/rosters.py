"""The rosters the loop has read, as it caches them for the relay path: who is on each board.

The loop writes the cache (`superdispatch/loop/reads.py`); an experiment's start reads it to
find which boards share an agent, and so must switch together, without asking AgentPod.
"""

from __future__ import annotations

from typing import Iterable

from django.core.cache import cache


def roster_key(board_id: str) -> str:
    return f"superdispatch:roster:v2:{board_id}"  # v2: (read at, rows)


def cached_agents(board_ids: Iterable[str]) -> dict[str, frozenset[str]]:
    """Each board's rostered agents as the loop last read them, for the boards it has read."""
    keys = {roster_key(board_id): board_id for board_id in board_ids}
    found = cache.get_many(list(keys))
    return {keys[key]: frozenset(row.agent_id for row in rows) for key, (_, rows) in found.items()}
