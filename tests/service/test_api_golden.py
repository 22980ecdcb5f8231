"""The API's answers over a recorded sandbox run, byte for byte.

Four sandbox scenarios (saturated-demo, the demo's fleet when the file was written, with the
policy asked and every agent that reports load weighed, busy-quiet, one-agent-lane,
no-station-lane) run one after another on a virtual clock with the loop in-process (relayed
card.ready placed at once, a sweep every 10 s, suggestions synced after each sweep), with record
ids drawn from a counter instead of at random. Every list and detail route is then read through
the operator API and compared with `golden/api_run.json`, written by the build before the
record's shape moved to one owner. A change to the JSON of any decision, candidate, board or
suggestion fails here.

To write the file again after a deliberate change of shape:
`SUPERDISPATCH_WRITE_GOLDEN=1 make test PYTEST_ARGS=tests/service/test_api_golden.py`.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from pathlib import Path

import pytest

import records.ids
from tests.support.world import make_world

GOLDEN = Path(__file__).parent / "golden" / "api_run.json"

# storage: CI runs it again on PostgreSQL, whose jsonb keeps keys in an order of its own.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.storage]


@pytest.fixture
def counted_ids(monkeypatch):
    """Record ids in the order they are made, so two runs name their records alike."""
    counter = itertools.count(1)

    class Counted:
        @staticmethod
        def token_hex(nbytes: int) -> str:
            return f"{next(counter):0{nbytes * 2}x}"

    monkeypatch.setattr(records.ids, "secrets", Counted)


def _recorded_run(scenario: str, minutes: int, **settings) -> None:
    world = make_world(scenario, arrivals=True, **settings)
    world.opt_in(*(b.id for b in world.suite.scenario.boards))
    world.sweep()
    world.sim.run(minutes * 60, on_tick=world.drive(10))


def _answers(api) -> dict:
    """Every list and detail route's answer, as parsed JSON, keyed by its path."""
    out: dict[str, object] = {}

    def get(path: str) -> dict:
        response = api.get(path)
        assert response.status_code == 200, (path, response.content[:200])
        body = response.json()
        out[path] = body
        return body

    for board in get("/v1/boards")["boards"]:
        get(f"/v1/boards/{board['boardId']}")
    before = None
    while True:  # every decision, newest first, a page at a time
        page = get("/v1/decisions?limit=200" + (f"&before={before}" if before else ""))["decisions"]
        for decision in page:
            get(f"/v1/decisions/{decision['id']}")
        if len(page) < 200:
            break
        before = page[-1]["createdAt"]
    for state in ("open", "all"):
        for suggestion in get(f"/v1/suggestions?state={state}")["suggestions"]:
            get(f"/v1/suggestions/{suggestion['id']}")
    return out


def test_the_api_answers_a_recorded_run_exactly_as_before(api, counted_ids):
    logging.getLogger("superdispatch").setLevel(logging.WARNING)
    _recorded_run("saturated-demo", 20, policy="on", candidates="all", sweep_seconds=10)
    _recorded_run("busy-quiet", 10)
    _recorded_run("one-agent-lane", 10)
    _recorded_run("no-station-lane", 10)
    answers = _answers(api)
    decisions = answers["/v1/decisions?limit=200"]["decisions"]
    assert len(decisions) > 20, "the run should record enough decisions to compare"
    text = json.dumps(answers, indent=1, sort_keys=False)
    if os.environ.get("SUPERDISPATCH_WRITE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text + "\n")
    expected = json.loads(GOLDEN.read_text())
    assert list(answers) == list(expected), "the same routes, in the same order"
    for path, body in expected.items():
        assert json.dumps(answers[path]) == json.dumps(body), path
