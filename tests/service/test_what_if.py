"""`manage.py what-if` and `GET /v1/what-if`: the store's decisions replayed under another formula."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from drf_spectacular.generators import SchemaGenerator

from common.times import iso
from placement import formulas
from records.store import what_if
from tests.conftest import T0
from tests.support.factories import make_decision

pytestmark = pytest.mark.django_db


def _candidate(agent: str, rate: float, claims: float) -> dict:
    record = (rate + 0.5) / 2
    return {
        "agent": agent,
        "terms": {"stageRecord": record, "successRate": claims, "sinceLastDispatchS": 100.0},
        "history": {
            "runs": 10,
            "succeeded": round(10 * rate),
            "verdicts": 0,
            "passes": 0,
            "weight": 10.0,
            "outcomeRate": rate,
            "verdictRate": 0.5,
            "stageRecord": record,
        },
    }


def _decisions(count: int, board: str = "brd_a", first: int = 0) -> None:
    """`count` cards (numbered from `first`, a minute apart), each held for A (the better
    record), claimed in 3 s, its run over 60 s later; every third run failed."""
    for n in range(first, first + count):
        made = T0 + timedelta(minutes=n)
        make_decision(
            board=board,
            card=f"card_{n}",
            chosen="agt_a",
            created_at=made,
            candidates=[_candidate("agt_a", 0.8, 0.7), _candidate("agt_b", 0.6, 0.6)],
            reserved_until=made + timedelta(seconds=60),
            outcome_status="claimed",
            outcome_by="agt_a",
            outcome_at=made + timedelta(seconds=3),
            run_status="failed" if n % 3 == 0 else "succeeded",
            run_ended_at=made + timedelta(seconds=63),
        )


def _run(*args) -> str:
    out = StringIO()
    call_command("what-if", *args, stdout=out)
    return out.getvalue()


def test_the_command_replays_and_estimates_each_formula():
    _decisions(40)
    text = _run("--formula", "wait-for-better", "--board", "brd_a")
    assert "40 decisions in the window; 38 replayed under wait-for-better@3" in text
    # The first has no claim before it; the second, a claim but no run over yet.
    assert "not replayed: 1, no claim before it to time claims by" in text
    assert "not replayed: 1, no finished run before it to time runs by" in text
    assert "wait-for-better@3 chooses differently on 0.0%: another agent 0, nobody 0, a busy agent 0" in text
    lines = text.splitlines()
    recorded = next(line for line in lines if line.startswith("idle-stage-success-lru@3"))
    assert "measured" in recorded and " 38 " in recorded
    # 25 of the 38 runs succeeded (cards 2 to 39, every third failed).
    assert "0.658 (" in recorded and "3.0 s (3.0 to 3.0)" in recorded
    pull = next(line for line in lines if line.startswith("pull"))
    assert "doubly-robust" in pull and " 38 " in pull  # every recorded outcome corrects its model
    assert "38 decisions replayed: enough to judge. To change the formula, set SUPERDISPATCH_FORMULA." in text


def test_the_command_says_plainly_when_there_are_too_few():
    _decisions(5)
    text = _run("--formula", "idle-stage-success-lru@3")
    assert (
        "too few decisions to judge (3 replayed; at least 30 are needed). Keep the current formula." in text
    )
    assert "SUPERDISPATCH_FORMULA" not in text


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--formula", "fastest"],
            "--formula 'fastest' is not a declared formula; one of " + ", ".join(formulas.recorded_names()),
        ),
        (["--formula", "wait-for-better", "--since", "soon"], "--since must be a time"),
        (
            ["--formula", "wait-for-better", "--since", "2026-11-14", "--until", "2026-11-13"],
            "--since (2026-11-14T00:00:00.000Z) must be before --until (2026-11-13T00:00:00.000Z)",
        ),
        (["--formula", "wait-for-better", "--board", "brd_nowhere"], "--board brd_nowhere is not a board"),
        (["--formula", "wait-for-better", "--board", "nowhere"], "--board must be a board id"),
        (
            ["--formula", "wait-for-better", "--since", "0001-01-01"],
            "--since must be 0001-01-02T00:00:00Z or later",
        ),
    ],
)
def test_the_command_names_a_bad_argument(args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _run(*args)


def test_the_route_answers_with_each_estimate(api):
    _decisions(35)
    _decisions(3, board="brd_b")
    answer = api.get(
        "/v1/what-if?formula=wait-for-better@3&board=brd_a"
        "&since=2026-11-13T10:05:00Z&until=2026-11-13T10:30:00Z"
    ).json()["whatIf"]
    # Minutes 5 to 29: 25 decisions, each with the claims of the look-back before it to go on.
    assert answer["decisions"] == 25 and answer["replayed"] == 25 and answer["notReplayed"] == []
    assert answer["enough"] is False and answer["verdict"].startswith("too few decisions to judge (25")
    assert answer["differs"] == {"share": 0.0, "anotherAgent": 0, "nobody": 0, "busyAgent": 0}
    assert [e["arm"] for e in answer["estimates"]] == ["recorded", "other", "pull"]
    assert [e["estimator"] for e in answer["estimates"]] == ["measured", "doubly-robust", "doubly-robust"]
    recorded = answer["estimates"][0]
    assert recorded["claimMeanS"] == {"value": 3.0, "low": 3.0, "high": 3.0}
    assert recorded["success"]["low"] < recorded["success"]["value"] < recorded["success"]["high"]
    everywhere = api.get("/v1/what-if").json()["whatIf"]
    assert everywhere["decisions"] == 38
    assert everywhere["formula"] == "wait-for-better@3"  # the other than the configured one


ROUTE = "/v1/what-if"


@pytest.mark.parametrize(
    "query, code, message",
    [
        (
            "formula=fastest",
            "bad-parameter",
            "formula must be a declared formula, by name or name@version: "
            f"one of {', '.join(formulas.recorded_names())} (by default "
            "the first that is not SUPERDISPATCH_FORMULA)",
        ),
        (
            "formula=wait-for-better&since=soon",
            "bad-parameter",
            "since must be a time (RFC 3339, or a date like 2026-11-01)",
        ),
        (
            "formula=wait-for-better&until=2026-13-01",
            "bad-parameter",
            "until must be a time (RFC 3339, or a date like 2026-11-01)",
        ),
        (
            "formula=wait-for-better&since=2026-11-14&until=2026-11-13",
            "bad-parameter",
            "since must be before until",
        ),
        ("formula=wait-for-better&board=nowhere", "bad-parameter", "board must be a board id (brd_…)"),
        (
            "since=0001-01-01",
            "bad-parameter",
            "since must be 0001-01-02T00:00:00Z or later: the replay reads the 24 hours before it",
        ),
        (
            "since=0001-01-01T23:59:59.999999Z",
            "bad-parameter",
            "since must be 0001-01-02T00:00:00Z or later: the replay reads the 24 hours before it",
        ),
        (
            "formula=wait-for-better&colour=red",
            "unknown-parameter",
            "unknown parameter 'colour'; this route takes: board, formula, since, until",
        ),
    ],
)
def test_the_route_names_a_bad_query(api, query, code, message):
    response = api.get(f"{ROUTE}?{query}")
    assert response.status_code == 400
    assert response.json() == {"error": {"code": code, "message": message}}


def test_a_board_nobody_knows_is_not_found_as_on_every_other_route(api):
    response = api.get(f"{ROUTE}?formula=wait-for-better&board=brd_nowhere")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not-found", "message": "no board brd_nowhere"}}


def test_the_calendars_first_day_is_accepted_once_a_day_has_passed(api):
    _decisions(3)
    assert api.get(f"{ROUTE}?since=0001-01-02").json()["whatIf"]["decisions"] == 3


def test_a_window_over_the_cap_is_refused_with_the_cap_named_before_any_replay(api, monkeypatch):
    _decisions(6)
    monkeypatch.setattr(what_if, "MOST_REPLAYED", 5)
    monkeypatch.setattr(what_if, "estimate", lambda *a, **k: pytest.fail("replayed past the cap"))
    response = api.get(ROUTE)
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "too-many-decisions",
            "message": (
                "the window holds more than 5 decisions, the most one what-if replays; narrow it with "
                "board, since or until"
            ),
        }
    }
    # A window of the cap itself is answered.
    monkeypatch.undo()
    monkeypatch.setattr(what_if, "MOST_REPLAYED", 5)
    narrowed = api.get(f"{ROUTE}?since={iso(T0 + timedelta(minutes=1))}")
    assert narrowed.status_code == 200 and narrowed.json()["whatIf"]["decisions"] == 5


def test_the_routes_look_back_reads_the_newest_decisions_before_the_window_at_most(api, monkeypatch):
    _decisions(10)
    since = T0 + timedelta(minutes=6)
    read = []
    real = what_if.recorded
    monkeypatch.setattr(what_if, "recorded", lambda *a: read.append(real(*a)) or read[-1])
    monkeypatch.setattr(what_if, "MOST_LOOKED_BACK", 2)
    assert api.get(f"{ROUTE}?since={iso(since)}").json()["whatIf"]["decisions"] == 4
    assert [d.card_id for d in read[0]] == [f"card_{n}" for n in range(4, 10)]
    # The command, run by an operator in a process of its own, reads the whole day before.
    assert len(what_if.recorded(None, since, None)) == 10


def test_the_schema_declares_every_answer_of_the_route():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    answers = schema["paths"]["/v1/what-if"]["get"]["responses"]
    assert {"200", "400", "401", "403", "404", "406", "503"} <= set(answers)
    assert "over-budget" in answers["503"]["description"]
    assert "more than 1,000 decisions" in answers["400"]["description"]
    assert "too-many-decisions" in answers["400"]["description"]
    assert "not a board SuperDispatch knows" in answers["404"]["description"]


def test_the_route_takes_the_operator_token(client):
    assert client.get(f"{ROUTE}?formula=wait-for-better").status_code == 401


def test_a_person_signed_in_browses_it(staff):
    _decisions(3)
    page = staff.get(f"{ROUTE}?formula=wait-for-better", HTTP_ACCEPT="text/html")
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    assert "too few decisions to judge" in page.content.decode()
