"""AgentPod: the bridge's roster for each board, and the capability registry of stations."""

from __future__ import annotations

from dataclasses import dataclass

from .clock import rfc3339
from .pipeline import Pipeline
from .replies import Refused
from .scenario import StationSpec


@dataclass
class BridgeRow:
    """A station's row on one board's roster; `enabled` is the person's switch on this board."""

    board_id: str
    key: str
    agent_id: str
    enabled: bool = True


class AgentPod:
    """Reads the bridge's state (busy, last took work) from the cards the agents work."""

    def __init__(self, pipeline: Pipeline, stations: tuple[StationSpec, ...] = ()) -> None:
        self.pipeline = pipeline
        self.stations = {s.station_id: s for s in stations}
        self.rows: list[BridgeRow] = []
        self._rows_of: dict[str, list[BridgeRow]] = {}  # board id -> its rows, in `rows` order
        self.station_of: dict[str, str | None] = {}  # agent id -> its station
        self.ready: dict[str, bool] = {}  # agent id -> its station's bridge is up
        self.roster_readers: set[str] = set()  # credential ids the hub lists in ROSTER_READERS
        self.catalog_readers: set[str] = set()  # ... and in CATALOG_READERS

    def add_agent(self, agent_id: str, station_id: str | None, ready: bool = True) -> None:
        self.station_of[agent_id] = station_id
        self.ready[agent_id] = ready

    def add_row(self, board_id: str, key: str, agent_id: str, enabled: bool = True) -> BridgeRow:
        row = BridgeRow(board_id, key, agent_id, enabled)
        self.rows.append(row)
        self._rows_of.setdefault(board_id, []).append(row)
        return row

    def row(self, board_id: str, agent_id: str) -> BridgeRow | None:
        return next((r for r in self._rows_of.get(board_id, ()) if r.agent_id == agent_id), None)

    def roster_json(self, board_id: str) -> dict:
        if board_id not in self.pipeline.boards:
            raise Refused(404, "board_not_found", f"no board {board_id}")
        agents = []
        for row in self._rows_of.get(board_id, ()):
            agent = self.pipeline.agents[row.agent_id]
            agents.append(
                {
                    "key": row.key,
                    "agentId": row.agent_id,
                    "principalId": agent.principal_id,
                    "stationId": self.station_of.get(row.agent_id),
                    "enabled": row.enabled,
                    "ready": self.ready.get(row.agent_id, True),
                    "busy": self.pipeline.is_working(row.agent_id),
                    "lastTookWorkAt": rfc3339(agent.last_claim_at),
                }
            )
        return {"boardId": board_id, "agents": agents}

    def catalog_json(self) -> dict:
        occupants: dict[str, str] = {}
        for agent_id, station_id in sorted(self.station_of.items()):
            if station_id is not None:
                occupants.setdefault(station_id, agent_id)
        return {
            "stations": [
                {
                    "stationId": s.station_id,
                    "runtime": s.runtime,
                    "harness": s.harness,
                    "occupant": occupants.get(s.station_id),
                    "isolation": s.isolation,
                    "models": list(s.models),
                    "tools": list(s.tools),
                    "credentials": list(s.credentials),
                }
                for s in self.stations.values()
            ]
        }
