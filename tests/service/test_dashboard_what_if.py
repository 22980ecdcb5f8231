"""The dashboard's "is it helping?": each board's what-if, worked out ahead in a task after a
sweep (at most once an hour a board) and read from its rows, never replayed on the page."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from common.config import rules_from
from records.console import pages
from records.models import BoardWhatIf, Candidate, Decision
from records.store import what_if
from records.store.actions import what_if as ahead
from records.store.signals import sweep_finished
from superdispatch import schedule
from tests.conftest import T0
from tests.service.test_what_if import _decisions

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

SWEPT = T0 + timedelta(hours=2)  # 40 decisions from T0, one a minute, an hour before


@pytest.fixture
def replays(monkeypatch):
    """Every replay the store asks of `placement.what_if`, by formula: each formula of one pass
    over the decisions (`what_if_each`), and each replay alone."""
    asked: list[str] = []
    replay, replay_each = what_if.what_if, what_if.what_if_each

    def counted(decisions, formula, rules, since=None):
        asked.append(formula.recorded)
        return replay(decisions, formula, rules, since)

    def counted_each(decisions, each, rules, since=None):
        asked.extend(f.recorded for f in each)
        return replay_each(decisions, each, rules, since)

    monkeypatch.setattr(what_if, "what_if", counted)
    monkeypatch.setattr(what_if, "what_if_each", counted_each)
    return asked


@pytest.fixture(autouse=True)
def sent(monkeypatch):
    """The tasks the sweeps send, each run here and now as a worker would run it."""
    tasks: list[tuple] = []

    def run(args, expires=None):
        tasks.append((args, expires))
        schedule.what_if_ahead_task(*args)

    monkeypatch.setattr(schedule.what_if_ahead_task, "apply_async", run)
    return tasks


def _sweep(now):
    for _, result in sweep_finished.send_robust(None, now=now):
        assert not isinstance(result, Exception), result


def test_a_sweep_works_it_out_and_again_only_after_the_hour(replays, sent, settings):
    _decisions(40)
    _sweep(SWEPT)
    # Each formula but the configured one, replayed once over the decisions read once.
    assert replays == ["wait-for-better@3", "pull-aware@1"]
    assert set(BoardWhatIf.objects.values_list("computed_at", flat=True)) == {SWEPT}
    # The sweep sent a task of its own, with the sweep's time, gone if no worker takes it
    # within an interval.
    assert sent == [(("2026-11-13T12:00:00.000Z",), settings.SUPERDISPATCH.sweep_seconds)]
    _sweep(SWEPT + timedelta(minutes=59))
    assert len(replays) == 2 and len(sent) == 1  # within the hour: the rows stand, no task sent
    _decisions(1, first=40)  # something new: replayed again an hour on
    _sweep(SWEPT + timedelta(hours=1))
    assert len(replays) == 4
    assert set(BoardWhatIf.objects.values_list("computed_at", flat=True)) == {SWEPT + timedelta(hours=1)}


def _figures() -> list[tuple]:
    """The board's rows as the dashboard shows them, but when they were worked out."""
    return list(
        BoardWhatIf.objects.order_by("board_id", "position").values_list(
            "board_id", "arm", "formula", "decisions", "replayed", "success", "success_low", "lead_s", "since"
        )
    )


def _afresh(now) -> list[tuple]:
    """The rows a replay of every board from nothing writes at `now`."""
    kept = list(BoardWhatIf.objects.all())
    BoardWhatIf.objects.all().delete()
    while ahead.do_what_if_ahead(now, rules_from(settings.SUPERDISPATCH)).done:
        pass
    fresh = _figures()
    BoardWhatIf.objects.all().delete()
    BoardWhatIf.objects.bulk_create(kept)
    return fresh


def test_a_board_with_nothing_new_is_not_replayed_again_and_its_rows_stand(replays):
    _decisions(40)
    _sweep(SWEPT)
    later = SWEPT + timedelta(hours=1)
    _sweep(later)
    assert len(replays) == 2  # nothing it was worked out from changed
    assert set(BoardWhatIf.objects.values_list("computed_at", "until")) == {(later, later)}
    assert _figures() == _afresh(later)  # the window a week back from now: the rows a replay writes
    assert {r.since for r in BoardWhatIf.objects.all()} == {later - ahead.WINDOW}


@pytest.mark.parametrize(
    "change",
    [
        lambda: Decision.objects.filter(card_id="card_7").update(run_status="failed"),  # settled otherwise
        lambda: Decision.objects.filter(card_id="card_39").delete(),  # gone
        lambda: Candidate.objects.filter(decision__card_id="card_8", agent_id="agt_b").delete(),
        lambda: setattr(what_if, "REPLAY_VERSION", what_if.REPLAY_VERSION + 1),  # the replay changed
    ],
)
def test_a_board_whose_record_changed_is_replayed_again(replays, change, monkeypatch):
    monkeypatch.setattr(what_if, "REPLAY_VERSION", what_if.REPLAY_VERSION)  # restored after
    _decisions(40)
    _sweep(SWEPT)
    change()
    later = SWEPT + timedelta(hours=1)
    _sweep(later)
    assert len(replays) == 4
    assert _figures() == _afresh(later)


def test_other_settings_replay_it_again(replays):
    _decisions(40)
    _sweep(SWEPT)
    rules = replace(rules_from(settings.SUPERDISPATCH), wait_margin=0.3)
    assert ahead.do_what_if_ahead(SWEPT + ahead.EVERY, rules).done == ["brd_a"]
    assert len(replays) == 4


def test_the_rows_say_what_each_formula_would_have_made_of_the_window():
    _decisions(40)
    _sweep(SWEPT)
    rows = list(BoardWhatIf.objects.order_by("position"))
    assert [(r.arm, r.formula) for r in rows] == [
        ("recorded", "idle-stage-success-lru@3"),
        ("other", "wait-for-better@3"),
        ("other", "pull-aware@1"),
        ("pull", "pull"),
    ]
    recorded, other, pull_aware, pull = rows
    assert (recorded.decisions, recorded.replayed, recorded.enough) == (40, 38, True)
    assert recorded.estimator == "measured" and recorded.success == pytest.approx(25 / 38)
    assert recorded.success_low < recorded.success < recorded.success_high
    assert other.replayed == 38 and other.enough and other.lead_s is not None
    assert pull.estimator == "doubly-robust" and pull.observed == 38
    # The new formula is replayed too (its steps rebuilt from the record), on the same decisions.
    assert pull_aware.replayed == 38 and pull_aware.enough and pull_aware.success is not None
    assert all((r.since, r.until) == (SWEPT - ahead.WINDOW, SWEPT) for r in rows)


def test_nothing_due_sends_no_task(sent):
    _sweep(SWEPT)  # no decision: no board
    _decisions(3)
    _sweep(SWEPT)
    _sweep(SWEPT + timedelta(minutes=5))
    assert len(sent) == 1


def _worked_out() -> list[tuple[str, object]]:
    return sorted(set(BoardWhatIf.objects.values_list("board_id", "computed_at")))


def test_a_sweep_works_out_one_board_the_longest_waiting_first():
    for board in ("brd_c", "brd_a", "brd_b"):
        _decisions(3, board=board)
    for minute in range(3):
        _sweep(SWEPT + timedelta(minutes=minute))
    assert _worked_out() == [
        ("brd_a", SWEPT),
        ("brd_b", SWEPT + timedelta(minutes=1)),
        ("brd_c", SWEPT + timedelta(minutes=2)),
    ]
    _sweep(SWEPT + timedelta(minutes=61))  # brd_b's hour is up, but brd_a has waited longer
    assert _worked_out() == [
        ("brd_a", SWEPT + timedelta(minutes=61)),
        ("brd_b", SWEPT + timedelta(minutes=1)),
        ("brd_c", SWEPT + timedelta(minutes=2)),
    ]


def test_a_board_quiet_of_late_is_worked_out_by_the_next_run_another_sends(sent):
    _decisions(3, board="brd_old")
    _decisions(3, board="brd_new")
    # brd_old's a day earlier: in the week, not in the last hours.
    Decision.objects.filter(board_id="brd_old").update(
        created_at=F("created_at") - timedelta(days=1),
        ladder_ready_at=F("ladder_ready_at") - timedelta(days=1),
        reserved_until=F("reserved_until") - timedelta(days=1),
        outcome_at=F("outcome_at") - timedelta(days=1),
        run_ended_at=F("run_ended_at") - timedelta(days=1),
    )
    _sweep(SWEPT)
    _sweep(SWEPT + timedelta(minutes=1))  # nothing stale, no recent board without rows
    assert _worked_out() == [("brd_new", SWEPT)] and len(sent) == 1
    _sweep(SWEPT + timedelta(hours=1))  # brd_new's rows are due again: the run finds brd_old first
    assert _worked_out() == [("brd_new", SWEPT), ("brd_old", SWEPT + timedelta(hours=1))]


def test_a_board_whose_replay_fails_is_passed_over(monkeypatch, caplog):
    _decisions(3, board="brd_a")
    _decisions(3, board="brd_b")
    each_formula = what_if.each_formula

    def broken(board_id, *args):
        if board_id == "brd_a":
            raise ValueError("a record the replay cannot read")
        return each_formula(board_id, *args)

    monkeypatch.setattr(what_if, "each_formula", broken)
    _sweep(SWEPT)
    assert _worked_out() == [("brd_b", SWEPT)]
    assert "what-if: board brd_a could not be replayed (ValueError); passed over" in caplog.text


def test_a_busy_board_replays_its_newest_decisions_only(monkeypatch):
    monkeypatch.setattr(ahead, "MOST_DECISIONS", 35)
    _decisions(40)
    _sweep(SWEPT)
    row = BoardWhatIf.objects.get(arm="recorded")
    # The newest 35 of the week: from card_5's, made five minutes after the first.
    assert (row.decisions, row.since, row.until) == (35, T0 + timedelta(minutes=5), SWEPT)


def test_a_board_gone_quiet_for_the_window_loses_its_rows():
    _decisions(3)
    _sweep(SWEPT)
    assert BoardWhatIf.objects.exists()
    _sweep(SWEPT + ahead.WINDOW + timedelta(hours=1))
    assert not BoardWhatIf.objects.exists()


@pytest.fixture
def now(monkeypatch):
    moment = SWEPT + timedelta(minutes=10)
    monkeypatch.setattr(pages, "clock", lambda: moment)
    return moment


def _what_if_table(page: str) -> str:
    start = page.index('id="sd-what-if"')
    return page[start : page.index("</table>", start)]


def test_the_dashboard_shows_each_formula_beside_the_measured(staff, now):
    _decisions(40)
    _sweep(SWEPT)
    page = staff.get("/admin/dashboard/", {"range": "day"}).content.decode()
    table = _what_if_table(page)
    # A column a formula: the measured, each other with the setting that chooses it, pull.
    assert (
        "<th>board</th><th>as recorded<br><small>what was measured</small></th>"
        "<th>wait-for-better@3<br><small><code>SUPERDISPATCH_FORMULA=wait-for-better@3</code>"
        "</small></th><th>pull-aware@1<br><small><code>SUPERDISPATCH_FORMULA=pull-aware@1"
        "</code></small></th><th>pull: nobody held<br><small>opt the board out</small></th>"
        "<th>worked out</th>"
    ) in table
    # 25 of the 38 replayed runs succeeded.
    assert (
        "<tr><td>brd_a</td><td>66% (51% to 81%)<br>96 s (74 s to 118 s)<br><small>"
        "idle-stage-success-lru@3: 38 of 40 replayed, measured</small></td>"
    ) in table
    assert "<small>38 of 40 replayed, doubly-robust</small>" in table
    # The new formula's column is replayed as the others are, not refused.
    assert table.count("<small>38 of 40 replayed, doubly-robust</small>") >= 2
    assert "0 of 40 replayed" not in table
    assert (
        "<td><small>2026-11-13 12:00:00 UTC, over 2026-11-06 12:00:00 UTC to "
        "2026-11-13 12:00:00 UTC</small></td>"
    ) in table


def test_the_dashboard_says_plainly_when_the_evidence_is_thin(staff, now):
    _decisions(10)
    _sweep(SWEPT)
    table = _what_if_table(staff.get("/admin/dashboard/").content.decode())
    assert table.count("too few decisions to judge") == 4
    assert (
        "too few decisions to judge</span><br><small>8 of 10 decisions replayed, and 30 are "
        "needed to judge. Most of the rest were not replayed: "
    ) in table
    assert "% (" not in table  # no figure is shown for a thin estimate


def test_a_recorded_formula_that_replayed_nothing_is_not_named_and_the_reason_reads(staff, now):
    _decisions(3)
    _sweep(SWEPT)
    BoardWhatIf.objects.filter(arm="recorded").update(
        formula="-",
        replayed=0,
        decisions=2,
        enough=False,
        not_replayed="no claim before it to time claims by",
    )
    table = _what_if_table(staff.get("/admin/dashboard/").content.decode())
    assert "-: " not in table
    assert (
        "<small>0 of 2 decisions replayed, and 30 are needed to judge. Most of the rest were "
        "not replayed: no hold had been claimed before them, so how soon agents claim is "
        "not known yet.</small>"
    ) in table


def test_the_dashboard_before_any_is_worked_out_says_so(staff, now):
    _decisions(3)
    page = staff.get("/admin/dashboard/").content.decode()
    assert 'id="sd-what-if"' not in page
    assert "No what-if worked out yet for these boards" in page


def test_the_page_replays_nothing_and_reads_the_rows_in_two_queries(staff, now, monkeypatch):
    _decisions(40)
    with CaptureQueriesContext(connection) as before:
        assert staff.get("/admin/dashboard/").status_code == 200
    _sweep(SWEPT)

    def refused(*args, **kwargs):
        raise AssertionError("the dashboard replayed decisions")

    monkeypatch.setattr(what_if, "what_if", refused)
    monkeypatch.setattr(what_if, "recorded", refused)
    with CaptureQueriesContext(connection) as after:
        page = staff.get("/admin/dashboard/").content.decode()
    assert "SUPERDISPATCH_FORMULA=wait-for-better@3" in page
    assert len(after.captured_queries) <= len(before.captured_queries)
    reads = [q["sql"] for q in after.captured_queries if "records_boardwhatif" in q["sql"]]
    assert len(reads) == 2  # the boards' times, and the rows


def test_what_the_rows_hold_is_escaped(staff, now):
    _decisions(3)
    _sweep(SWEPT)
    BoardWhatIf.objects.filter(arm="other").update(formula="<b>x@1</b>", not_replayed="<script>y</script>")
    BoardWhatIf.objects.filter(arm="recorded").update(formula="<i>z@1</i>")
    page = staff.get("/admin/dashboard/").content.decode()
    assert "<b>x@1" not in page and "<script>y" not in page and "<i>z@1" not in page
    assert "&lt;b&gt;x@1&lt;/b&gt;" in page and "&lt;script&gt;y&lt;/script&gt;" in page
    assert "SUPERDISPATCH_FORMULA=&lt;b&gt;x@1&lt;/b&gt;" in page and "&lt;i&gt;z@1&lt;/i&gt;: " in page


def test_a_viewer_without_permission_is_refused(client, django_user_model):
    user = django_user_model.objects.create_user("nobody", password="pw-for-tests-1", is_staff=True)
    client.force_login(user)
    assert client.get("/admin/dashboard/").status_code == 403


def test_a_window_whose_start_passed_a_decision_is_replayed_again(replays):
    _decisions(40)
    _decisions(5, first=100)  # in the hour after
    _sweep(SWEPT)
    # A week on, the window starts after the first 20: the same decisions read, 20 fewer judged.
    later = T0 + ahead.WINDOW + timedelta(minutes=20)
    assert ahead.do_what_if_ahead(later, rules_from(settings.SUPERDISPATCH)).done == ["brd_a"]
    assert len(replays) == 4
    assert _figures() == _afresh(later)
    assert BoardWhatIf.objects.get(arm="recorded").decisions == 25
