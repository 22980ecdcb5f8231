"""SuperWitness: a board stage's finished runs, page by page, up to a thousand."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from placement.facts import Run
from superdispatch.clients import BadShape

from . import bodies
from .conftest import WITNESS_AUDIENCE
from .server import Reply, Request

RUNS = "/v1/runs"
SINCE = datetime(2026, 10, 14, 10, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
ENDED = datetime(2026, 11, 12, 8, 0, tzinfo=timezone.utc)


class Pages:
    """An endless history: every page is full and names a next cursor."""

    def __call__(self, request: Request) -> Reply:
        page = int(request.query.get("cursor", ["0"])[0])
        return Reply(200, bodies.runs([bodies.run()] * 200, next_cursor=str(page + 1)))


def test_runs_are_asked_for_the_board_stage_with_the_documented_query(suite, mint, witness):
    suite.route("GET", RUNS, Reply(200, bodies.runs([bodies.run()])))
    assert witness.runs("brd_1", "review", SINCE) == (Run("prn_ada", True, ENDED, None),)
    (asked,) = suite.hits("GET", RUNS)
    assert asked.query == {
        "source": ["superpipeline"],
        "scope": ["brd_1"],
        "stage_key": ["review"],
        "status": ["succeeded", "failed"],
        "since": ["2026-10-14T08:00:00.123Z"],
        "limit": ["200"],
    }
    assert mint.audience_of(asked) == WITNESS_AUDIENCE


def test_next_cursor_is_followed_until_it_ends(suite, witness):
    suite.route(
        "GET",
        RUNS,
        Reply(200, bodies.runs([bodies.run("prn_a")], next_cursor="c2")),
        Reply(200, bodies.runs([bodies.run("prn_b", "failed")], next_cursor=None)),
    )
    runs = witness.runs("brd_1", "review", SINCE)
    assert [(r.principal_id, r.succeeded) for r in runs] == [("prn_a", True), ("prn_b", False)]
    assert [r.query.get("cursor") for r in suite.hits("GET", RUNS)] == [None, ["c2"]]


def test_reading_stops_at_a_thousand_runs(suite, witness):
    suite.route("GET", RUNS, Pages())
    assert len(witness.runs("brd_1", "review", SINCE)) == 1000
    assert len(suite.hits("GET", RUNS)) == 5


def test_a_smaller_total_stops_mid_page(suite, witness):
    suite.route("GET", RUNS, Pages())
    assert len(witness.runs("brd_1", "review", SINCE, limit_total=300)) == 300
    assert len(suite.hits("GET", RUNS)) == 2


def test_empty_page_naming_a_cursor_ends_the_read(suite, witness):
    suite.route("GET", RUNS, Reply(200, bodies.runs([], next_cursor="same")))
    assert witness.runs("brd_1", "review", SINCE) == ()
    assert len(suite.hits("GET", RUNS)) == 1


def test_runs_at_another_stage_without_a_stage_or_in_another_status_are_not_kept(suite, witness):
    suite.route(
        "GET",
        RUNS,
        Reply(
            200,
            bodies.runs(
                [
                    bodies.run("prn_here"),
                    bodies.run("prn_elsewhere", stage_key="build"),
                    bodies.run("prn_unstaged", stage_key=None),
                    bodies.run("prn_gone", "cancelled"),
                ]
            ),
        ),
    )
    assert [r.principal_id for r in witness.runs("brd_1", "review", SINCE)] == ["prn_here"]


@pytest.mark.parametrize(
    "value, mark",
    [
        ({"score": 0.8}, 0.8),
        ({"score": 3}, 3.0),
        ({"decision": "approve"}, 1.0),
        ({"decision": "PASS"}, 1.0),
        ({"decision": "accept"}, 1.0),
        ({"decision": "request_changes"}, 0.0),
        ({"decision": "reject"}, 0.0),
        ({"decision": "fail"}, 0.0),
        ({"decision": "abstain"}, None),
        ({"score": True}, None),
        ({"comment": "fine"}, None),
        ("approve", None),
    ],
)
def test_newest_verdict_gives_the_pass_mark(suite, witness, value, mark):
    suite.route("GET", RUNS, Reply(200, bodies.runs([bodies.run(verdict=value)])))
    (run,) = witness.runs("brd_1", "review", SINCE)
    assert run.mark == mark


@pytest.mark.parametrize(
    "body",
    [
        {"next_cursor": None},
        bodies.runs([{**bodies.run(), "executor": None}]),
        bodies.runs([{**bodies.run(), "ended_at": None}]),
        bodies.runs([{**bodies.run(), "latest_verdict": {"decision": "approve"}}]),
        bodies.runs([bodies.run()], next_cursor=7),
    ],
)
def test_page_of_the_wrong_shape_is_bad_shape(suite, witness, body):
    suite.route("GET", RUNS, Reply(200, body))
    with pytest.raises(BadShape):
        witness.runs("brd_1", "review", SINCE)


def test_a_bad_page_fails_the_whole_read(suite, witness):
    suite.route(
        "GET", RUNS, Reply(200, bodies.runs([bodies.run()], next_cursor="c2")), Reply(200, {"runs": "later"})
    )
    with pytest.raises(BadShape):
        witness.runs("brd_1", "review", SINCE)
