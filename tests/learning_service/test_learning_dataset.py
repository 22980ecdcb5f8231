import json
import urllib.request

import pytest
from django.db import connection
from django.http import StreamingHttpResponse
from django.test.utils import CaptureQueriesContext

from learning import dataset
from learning.store import decision_examples
from placement.learned import FEATURES
from superdispatch.settings_test import TEST_OPERATOR_TOKEN
from tests.conftest import at
from tests.support.factories import make_decision
from tests.support.learning_factories import settled

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

ROW_FIELDS = {
    "decisionId",
    "boardId",
    "cardId",
    "stageKey",
    "capability",
    "policy",
    "tier",
    "tierStep",
    "createdAt",
    "hour",
    "outcome",
    "outcomeBy",
    "outcomeAt",
    "agentId",
    "source",
    "chosen",
    "eligible",
    "filters",
    "score",
    "stageHistory",
    "pool",
    "label",
    "target",
    "features",
    "runStatus",
    "runVerdictMark",
    "runEndedAt",  # schema 2: the claim's run, null until known
}


def jsonl_rows(response) -> list[dict]:
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]


def test_a_row_carries_every_documented_field_for_each_candidate(api):
    d = settled(1, created_at=at(3600 * 5))
    response = api.get("/v1/dataset")
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/x-ndjson"
    ada, bob, cyd = jsonl_rows(response)
    for row in (ada, bob, cyd):
        assert set(row) == ROW_FIELDS
    assert (ada["decisionId"], ada["boardId"], ada["cardId"], ada["stageKey"]) == (
        d.id,
        "brd_a",
        "card_1",
        "review",
    )
    assert ada["capability"] == {"all": ["code-review"], "any": []}
    assert (ada["tier"], ada["tierStep"], ada["hour"]) == ("winner", 1, 15)
    assert (ada["outcome"], ada["outcomeBy"]) == ("claimed", "agt_ada")
    assert ada["chosen"] and ada["label"] == "won-claimed" and ada["target"] == 1
    assert (ada["runStatus"], ada["runVerdictMark"], ada["runEndedAt"]) == (None, None, None)
    assert len(ada["features"]) == len(FEATURES)
    assert bob["label"] == "lost" and bob["target"] is None and bob["features"] is not None
    assert cyd["eligible"] is False and cyd["features"] is None
    assert cyd["filters"]["idle"] == "not-idle" and cyd["filters"]["roster"] is True
    assert ada["pool"] == {"candidates": 3, "inSet": 3, "eligible": 2, "busy": 1}


def test_only_settled_decisions_make_rows(api):
    kept = settled(1)
    make_decision(card="card_open", chosen="agt_ada", candidates=[{"agent": "agt_ada", "total": 1}])
    assert {r["decisionId"] for r in jsonl_rows(api.get("/v1/dataset"))} == {kept.id}


def test_rows_come_oldest_first_ties_broken_by_id(api):
    late = settled(1, created_at=at(20))
    tied = sorted([settled(2, created_at=at(10)), settled(3, created_at=at(10))], key=lambda d: d.id)
    early = settled(4, created_at=at(0))
    order = list(dict.fromkeys(r["decisionId"] for r in jsonl_rows(api.get("/v1/dataset"))))
    assert order == [early.id, tied[0].id, tied[1].id, late.id]


def test_since_keeps_decisions_created_at_or_after_it(api):
    settled(1, created_at=at(-1))
    on_time = settled(2, created_at=at(0))
    later = settled(3, created_at=at(3600 * 24))
    rows = jsonl_rows(api.get("/v1/dataset", {"since": "2026-11-13T10:00:00Z"}))
    assert list(dict.fromkeys(r["decisionId"] for r in rows)) == [on_time.id, later.id]
    by_date = jsonl_rows(api.get("/v1/dataset", {"since": "2026-11-14"}))
    assert {r["decisionId"] for r in by_date} == {later.id}


def test_a_read_stops_at_the_cap_and_the_json_document_says_so(api, monkeypatch):
    monkeypatch.setattr(dataset, "MAX_DECISIONS", 3)
    monkeypatch.setattr(dataset, "CHUNK", 2)
    made = [settled(n, created_at=at(n)) for n in range(5)]
    ids = list(dict.fromkeys(r["decisionId"] for r in jsonl_rows(api.get("/v1/dataset"))))
    assert ids == [d.id for d in made[:3]]
    response = api.get("/v1/dataset", {"format": "json"})
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/json"
    document = json.loads(b"".join(response.streaming_content))
    assert document["schema"] == 2 and document["decisions"] == 3 and document["truncated"]
    assert list(dict.fromkeys(r["decisionId"] for r in document["rows"])) == ids


def test_the_json_document_holds_the_same_rows_as_the_lines(api):
    settled(1, created_at=at(0))
    settled(2, created_at=at(1), status="expired", by=None)
    document = json.loads(b"".join(api.get("/v1/dataset", {"format": "json"}).streaming_content))
    assert document["rows"] == jsonl_rows(api.get("/v1/dataset"))
    assert (document["decisions"], document["truncated"]) == (2, False)


def test_an_empty_dataset_is_empty_in_both_formats(api):
    assert b"".join(api.get("/v1/dataset").streaming_content) == b""
    empty = json.loads(b"".join(api.get("/v1/dataset", {"format": "json"}).streaming_content))
    assert empty == {"schema": 2, "target": "claimed", "rows": [], "decisions": 0, "truncated": False}


def test_rows_are_read_lazily_a_chunk_at_a_time(api, monkeypatch):
    monkeypatch.setattr(dataset, "CHUNK", 2)
    for n in range(5):
        settled(n, created_at=at(n))
    with CaptureQueriesContext(connection) as queries:
        response = api.get("/v1/dataset")
        assert len(queries) == 0  # nothing is read until the body is
        pieces = iter(response.streaming_content)
        first = next(pieces)
        assert len(queries) == 2  # one chunk of decisions, and their candidates
        assert len(first.splitlines()) == 2 * 3
        rest = list(pieces)
    assert [len(p.splitlines()) for p in rest] == [6, 3]
    assert len(queries) == 6


@pytest.mark.parametrize(
    "params,code",
    [
        ({"format": "csv"}, "bad-parameter"),
        ({"since": "last tuesday"}, "bad-parameter"),
        ({"limit": "5"}, "unknown-parameter"),
    ],
)
def test_a_bad_query_is_a_400_naming_it(api, params, code):
    response = api.get("/v1/dataset", params)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert list(params)[0] in response.json()["error"]["message"]


@pytest.mark.django_db(transaction=True)
def test_the_dataset_streams_over_real_http(live_server):
    settled(1, created_at=at(0))
    settled(2, created_at=at(1))
    request = urllib.request.Request(
        f"{live_server.url}/v1/dataset", headers={"Authorization": f"Bearer {TEST_OPERATOR_TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.headers["Content-Type"] == "application/x-ndjson"
        assert answer.headers.get("Content-Length") is None  # streamed, not buffered
        lines = answer.read().splitlines()
    assert len(lines) == 6 and json.loads(lines[0])["cardId"] == "card_1"


def test_a_training_read_yields_the_same_examples_as_the_full_records():
    settled(1, status="claimed", by="agt_ada", created_at=at(1))
    settled(2, status="claimed-by-other", by="agt_bob", created_at=at(2))
    settled(3, status="expired", by=None, created_at=at(3))
    make_decision(
        card="card_4",
        chosen=None,
        tier=("any-match", 2),
        created_at=at(4),
        outcome_status="claimed",
        outcome_by="agt_bob",
        outcome_at=at(30),
        candidates=[
            {"agent": "agt_ada", "terms": {"successRate": 0.5}},
            {"agent": "agt_bob", "terms": {"successRate": 0.25}},
        ],
    )
    settled(5, status="superseded", by=None, created_at=at(5))

    def read(for_training: bool) -> list:
        return [
            r
            for chunk in dataset.record_chunks(None, newest_first=True, for_training=for_training)
            for r in chunk
        ]

    full, lean = read(False), read(True)
    examples = [e for r in full for e in decision_examples(r)]
    assert examples and [e for r in lean for e in decision_examples(r)] == examples
    bob = {r["cardId"]: r["candidates"][1] for r in lean}
    assert bob["card_1"]["score"] is None and bob["card_1"]["filters"]  # neither held nor claimed
    assert bob["card_2"]["score"] is not None and bob["card_4"]["score"] is not None
