"""A small suite and short ways to call it, for the sandbox's tests."""

from __future__ import annotations

import json
from typing import Any

from sandbox import Suite, parse_scenario
from sandbox.pipeline_state import Card


def small_scenario(**board_overrides: Any):
    board = {
        "id": "brd_r",
        "name": "Review",
        "stages": [
            {"key": "review", "owner": "code-review"},
            {"key": "qa", "owner": "qa", "placement": {"isolation": "container", "models": ["m-large"]}},
        ],
        **board_overrides,
    }
    return parse_scenario(
        {
            "name": "small",
            "seed": 3,
            "tenantId": "tnt_t",
            "boards": [
                board,
                {"id": "brd_o", "name": "Other", "stages": [{"key": "build", "owner": "build"}]},
            ],
            "agents": [
                {
                    "id": "agt_ada",
                    "capabilities": ["code-review", "qa"],
                    "station": "station_ada",
                    "boards": ["brd_r"],
                },
                {
                    "id": "agt_bob",
                    "capabilities": ["code-review"],
                    "station": "station_bob",
                    "boards": ["brd_r"],
                },
                {
                    "id": "agt_cyd",
                    "capabilities": ["code-review"],
                    "concurrency": 2,
                    "capacity": 2,
                    "boards": [{"board": "brd_r", "bridge": False}],
                },
                {
                    "id": "agt_eli",
                    "capabilities": ["build"],
                    "grants": ["brd_o"],
                    "principal": None,
                    "boards": [{"board": "brd_o", "enabled": False, "key": "eli-box"}],
                },
            ],
            "stations": [
                {
                    "stationId": "station_ada",
                    "runtime": "rt_1",
                    "harness": "codex",
                    "isolation": {"value": "container", "proof": "probed"},
                    "models": [{"id": "m-large", "proof": "declared"}],
                    "tools": [{"id": "git", "proof": "installed"}],
                    "credentials": [{"name": "GITHUB_TOKEN", "proof": "declared"}],
                },
            ],
        }
    )


class World:
    """A suite with its credential's tokens at hand."""

    def __init__(self, scenario) -> None:
        self.suite = Suite(scenario)
        self.clock = self.suite.clock
        self.pipeline = self.suite.pipeline

    def url(self, product: str, path: str) -> str:
        return getattr(self.suite.urls, product) + path

    def token(self, product: str, credential: str | None = None) -> str:
        status, _, body = self.suite.handle(
            "POST",
            self.url("accounts", "/api/token/service"),
            headers={"Authorization": f"Bearer {credential or self.suite.credential}"},
            body=json.dumps({"audience": self.suite.urls.audience(product)}).encode(),
        )
        assert status == 200, body
        return json.loads(body)["access_token"]

    def call(
        self,
        method: str,
        product: str,
        path: str,
        body: Any = None,
        token: str | None = None,
        query: dict | None = None,
    ) -> tuple[int, Any]:
        """The product's status and decoded JSON answer (raw bytes when it is not JSON)."""
        headers = {"Authorization": f"Bearer {token or self.token(product)}"}
        data = json.dumps(body).encode() if body is not None else b""
        status, _, raw = self.suite.handle(method, self.url(product, path), query, headers, data)
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw

    def card(self, priority: int = 0, board: str = "brd_r", stage: str | None = None) -> Card:
        return self.pipeline.add_card(board, priority=priority, stage_key=stage)

    def events(self, kind: str) -> list[dict]:
        return [d.event for d in self.suite.relay.deliveries if d.event["type"] == kind]
