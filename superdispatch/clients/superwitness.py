"""SuperWitness: the finished runs at a board stage, for each candidate's stage record."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from placement.facts import Run
from placement.stage_runs import verdict_mark

from . import shape
from .http import Product
from .shape import Answer, Text, Time

RUNS_PATH = "/v1/runs"
ROUTES = (f"GET {RUNS_PATH}",)  # every call this client makes, as a metric names it
PAGE_SIZE = 200
MAX_RUNS = 1000
_OUTCOMES = {"succeeded": True, "failed": False}


class SuperWitness(Product):
    """SuperWitness's finished runs, with tokens for its public URL as audience."""

    name = "superwitness"

    def runs(
        self, board_id: str, stage_key: str, since: datetime, limit_total: int = MAX_RUNS
    ) -> tuple[Run, ...]:
        """The board stage's succeeded and failed runs since `since`, reading at most
        `limit_total` runs across pages. A run not at this stage (or from a SuperPipeline
        that does not report stages) or in another status is read but not kept."""
        query = [
            ("source", "superpipeline"),
            ("scope", board_id),
            ("stage_key", stage_key),
            ("status", "succeeded"),
            ("status", "failed"),
            ("since", shape.rfc3339(since)),
            ("limit", str(PAGE_SIZE)),
        ]
        kept: list[Run] = []
        read, cursor = 0, None
        while True:
            params = query + ([("cursor", cursor)] if cursor else [])
            page, cursor = self._http.call("GET", RUNS_PATH, _page, params=params, read=True)
            page = page[: limit_total - read]
            read += len(page)
            kept.extend(run for key, run in page if key == stage_key and run is not None)
            # An empty page that still names a cursor would otherwise be followed forever.
            if cursor is None or not page or read >= limit_total:
                return tuple(kept)


class _Executor(msgspec.Struct, gc=False):
    id: Text


class _Judged(msgspec.Struct, gc=False):
    value: Any  # whatever the verdict says; `verdict_mark` reads it


class _Run(msgspec.Struct, gc=False, kw_only=True):
    executor: _Executor
    status: Text
    stage_key: Text | None = None
    ended_at: Time
    latest_verdict: _Judged | None = None


class _Page(Answer):
    runs: tuple[_Run, ...]
    next_cursor: Text | None = None


_PAGE = shape.decoder(_Page)


def _page(content: bytes) -> tuple[tuple[tuple[str | None, Run | None], ...], str | None]:
    page = shape.decode(_PAGE, content, "runs")
    return tuple(map(_run, page.runs)), page.next_cursor


def _run(run: _Run) -> tuple[str | None, Run | None]:
    """The run's stage key, and the run when it finished as succeeded or failed."""
    if run.status not in _OUTCOMES:
        return run.stage_key, None
    verdict = run.latest_verdict
    return run.stage_key, Run(
        principal_id=run.executor.id,
        succeeded=_OUTCOMES[run.status],
        ended_at=shape.utc(run.ended_at),
        mark=None if verdict is None else verdict_mark(verdict.value),
    )
