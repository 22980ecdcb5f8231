"""SuperWitness: finished runs, newest first, read in pages by an opaque cursor."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime

from .clock import parse_rfc3339, rfc3339
from .replies import Refused

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


@dataclass(frozen=True)
class WitnessRun:
    seq: int
    executor_id: str
    executor_name: str
    status: str  # succeeded | failed | cancelled
    scope: str  # the board
    stage_key: str | None
    ended_at: datetime
    verdict: dict | None  # the latest verdict's value, e.g. {"decision": "approve"}
    source: str = "superpipeline"

    def key(self) -> tuple[datetime, int]:
        return (self.ended_at, self.seq)


def _cursor(run: WitnessRun) -> str:
    return base64.urlsafe_b64encode(f"run|{run.seq}".encode()).decode().rstrip("=")


def _cursor_seq(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        prefix, _, seq = text.partition("|")
        if prefix != "run":
            raise ValueError(cursor)
        return int(seq)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise Refused(400, "invalid_cursor", "the cursor is not one this service gave") from None


class Witness:
    def __init__(self) -> None:
        self.runs: list[WitnessRun] = []

    def record(
        self,
        executor_id: str,
        status: str,
        scope: str,
        stage_key: str | None,
        ended_at: datetime,
        verdict: dict | None,
        executor_name: str = "",
    ) -> WitnessRun:
        run = WitnessRun(
            len(self.runs) + 1,
            executor_id,
            executor_name or executor_id,
            status,
            scope,
            stage_key,
            ended_at,
            verdict,
        )
        self.runs.append(run)
        return run

    def runs_json(self, query: dict[str, list[str]]) -> dict:
        """`GET /v1/runs` with `source`, `scope`, `stage_key`, repeated `status`, `since`, `limit`,
        `cursor`."""

        def one(name: str) -> str | None:
            values = query.get(name) or []
            return values[-1] if values else None

        try:
            limit = min(int(one("limit")), MAX_LIMIT) if one("limit") is not None else DEFAULT_LIMIT
        except ValueError:
            limit = 0
        if limit < 1:
            raise Refused(400, "invalid_request", "limit must be a positive whole number")
        since = None
        if one("since") is not None:
            try:
                since = parse_rfc3339(one("since"))
            except ValueError:
                raise Refused(400, "invalid_request", "since must be an RFC 3339 time") from None
        before = None
        if one("cursor"):
            seq = _cursor_seq(one("cursor"))
            if not 1 <= seq <= len(self.runs):
                raise Refused(400, "invalid_cursor", "the cursor is not one this service gave")
            before = self.runs[seq - 1].key()
        statuses = set(query.get("status") or [])
        source, scope, stage_key = one("source"), one("scope"), one("stage_key")
        matching = [
            run
            for run in self.runs
            if (source is None or run.source == source)
            and (scope is None or run.scope == scope)
            and (stage_key is None or run.stage_key == stage_key)
            and (not statuses or run.status in statuses)
            and (since is None or run.ended_at >= since)
            and (before is None or run.key() < before)
        ]
        matching.sort(key=WitnessRun.key, reverse=True)
        page = matching[:limit]
        return {
            "runs": [
                {
                    "executor": {"id": run.executor_id, "name": run.executor_name},
                    "status": run.status,
                    "stage_key": run.stage_key,
                    "ended_at": rfc3339(run.ended_at),
                    "latest_verdict": {"value": run.verdict} if run.verdict is not None else None,
                }
                for run in page
            ],
            "next_cursor": _cursor(page[-1]) if len(matching) > limit else None,
        }
