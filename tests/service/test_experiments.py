"""Experiments on the service side: starting one through the API (and every way it is refused
with a 400 naming what was wrong), the guardrail's drop and the decision after a block, autopilot
changing each board's formula with its audit entry, and the record read back as cards."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from access.models import AuditEntry
from placement import switchback
from placement.formulas import DEFAULT
from records.models import Board, Experiment, ExperimentState
from records.store import experiments
from records.store.actions import experiments as experiment_actions
from records.store.actions.boards import do_opt_in
from records.store.actions.experiments import (
    ExperimentError,
    Plan,
    do_review_experiments,
    do_set_board_formula,
    do_start_experiment,
    do_stop_experiment,
)
from tests.conftest import T0
from tests.support.factories import make_decision
from tests.support.world import lane, make_world

pytestmark = [pytest.mark.django_db, pytest.mark.storage]
FORMULA = DEFAULT.recorded


@pytest.fixture
def fleet():
    """Two boards that share every agent (one cluster) and a third of its own, opted in and
    swept once, so the loop has read (and cached) each roster."""
    scenario = lane(boards=("brd_a", "brd_b"))
    scenario["boards"].append({"id": "brd_c", "stages": [{"key": "review", "owner": "code-review"}]})
    scenario["agents"].append({"id": "agt_z", "capabilities": ["code-review"], "boards": ["brd_c"]})
    world = make_world(scenario)
    world.opt_in("brd_a", "brd_b", "brd_c")
    world.sweep()
    return world


def _body(**over):
    return {
        "boards": ["brd_a", "brd_b"],
        "arms": [FORMULA, "pull"],
        "objective": "success",
        "blocks": 8,
        "seed": 3,
        **over,
    }


def _refusal(api, body) -> str:
    answer = api.post("/v1/experiments", body, content_type="application/json")
    assert answer.status_code == 400, answer.content
    assert Experiment.objects.count() == 0
    return answer.json()["error"]["message"]


def test_an_experiment_starts_with_its_schedule_stored_and_an_audit_entry(api, fleet):
    answer = api.post("/v1/experiments", _body(holdbackEvery=8), content_type="application/json")
    assert answer.status_code == 201, answer.content
    got = answer.json()["experiment"]
    assert got["state"] == "running" and got["boards"] == ["brd_a", "brd_b"] and got["seed"] == 3
    assert len(got["schedule"]) == 8 and got["blockSeconds"] == 1800 and got["holdbackEvery"] == 8
    # balanced within each run of its arms, and drawn from its seed
    assert sorted(b["arm"] for b in got["schedule"][:2]) == sorted([FORMULA, "pull"])
    drawn = switchback.draw_schedule(
        [FORMULA, "pull"],
        starts=experiments.schedule_of(Experiment.objects.get())[0].starts,
        block_seconds=1800,
        blocks=8,
        seed=3,
    )
    assert [b["arm"] for b in got["schedule"]] == [b.arm for b in drawn]
    entry = AuditEntry.objects.get(action="experiment.start")
    assert entry.target == got["id"] and entry.after["arms"] == [FORMULA, "pull"]
    assert api.get(f"/v1/experiments/{got['id']}").json()["experiment"]["id"] == got["id"]
    assert [e["id"] for e in api.get("/v1/experiments").json()["experiments"]] == [got["id"]]


def test_the_list_of_experiments_refuses_a_body_as_every_read_does(api, fleet):
    answer = api.generic("GET", "/v1/experiments", b"{}", content_type="application/json")
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "unexpected-body"


def test_an_experiment_that_would_split_a_cluster_is_a_400_naming_the_board_left_out(api, fleet):
    message = _refusal(api, _body(boards=["brd_a"]))
    assert message.startswith("boards:") and "brd_b" in message and "switch together" in message


def test_an_experiment_that_overlaps_a_live_one_is_a_400(api, fleet):
    assert api.post("/v1/experiments", _body(), content_type="application/json").status_code == 201
    answer = api.post("/v1/experiments", _body(), content_type="application/json")
    assert answer.status_code == 400 and "live experiment" in answer.json()["error"]["message"]
    assert Experiment.objects.count() == 1


@pytest.mark.parametrize(
    "over, names",
    [
        ({"arms": [FORMULA, "no-such@1"]}, "arms: arm 'no-such@1'"),
        ({"arms": [FORMULA, "wait-for-better@3"]}, "arms: pull must be an arm"),
        ({"arms": ["pull", "pull"]}, "arms: name at least two arms"),
        ({"blocks": 3}, "blocks: an experiment of 2 arms runs from 4"),
        ({"endsAt": "2020-01-01T00:00:00Z", "blocks": None}, "endsAt"),
        ({"boards": ["brd_a", "brd_b", "brd_nope"]}, "board brd_nope is not opted in"),
        ({"guardrail": {"successDrop": 1.0}}, "guardrail: successDrop"),
        ({"burnInSeconds": 1800}, "burnInSeconds"),
        ({"objective": "speed"}, "objective must be"),
        ({"blockMinutes": 0}, "blockMinutes must be"),
        ({"holdbackEvery": 1}, "holdbackEvery must be"),
        ({"colour": "red"}, "unknown field 'colour'"),
    ],
)
def test_each_bad_field_is_a_400_naming_it_and_nothing_is_written(api, fleet, over, names):
    body = {k: v for k, v in _body(**over).items() if v is not None}  # None: left out
    assert names in _refusal(api, body)
    assert not AuditEntry.objects.filter(action="experiment.start").exists()


def test_giving_both_blocks_and_an_end_time_is_a_400(api, fleet):
    later = (timezone.now() + timedelta(hours=4)).isoformat()
    assert "blocks: give the number of blocks or an end time" in _refusal(api, _body(endsAt=later))


def test_a_board_whose_roster_the_loop_has_not_read_is_a_400():
    do_opt_in("brd_q", T0)
    with pytest.raises(ExperimentError, match="roster has not been read"):
        do_start_experiment(Plan(boards=("brd_q",), arms=(FORMULA, "pull"), objective="lead", blocks=4), T0)


# --- After each block: the guardrail, the decision and autopilot ----------------------------


def _started(boards=("brd_a",), **over) -> Experiment:
    for board in boards:
        do_opt_in(board, T0)
    return do_start_experiment(
        Plan(
            boards=boards,
            arms=(FORMULA, "pull"),
            objective="success",
            block_seconds=600,
            blocks=4,
            seed=1,
            **over,
        ),
        T0,
        rosters_read={b: {f"agt_{b}"} for b in boards},
    )


def _analysis(winner=None, drops=(), blocks_to_decision=3):
    return SimpleNamespace(
        winner=winner,
        blocks_to_decision=blocks_to_decision,
        drops=tuple(SimpleNamespace(arm=a, why=w) for a, w in drops),
        to_dict=lambda: {"winner": winner, "blocksToDecision": blocks_to_decision},
    )


@pytest.fixture
def reads(monkeypatch):
    """The analysis the review reads, as the test says it (placement's own is tested there)."""
    said = {"analysis": _analysis()}
    monkeypatch.setattr(experiment_actions.switchback, "analyse", lambda *a, **k: said["analysis"])
    return said


def test_nothing_is_reviewed_before_a_block_ends(reads):
    _started()
    assert do_review_experiments(T0 + timedelta(seconds=599)) == 0


def test_the_guardrail_drops_an_arm_from_the_rest_of_the_schedule_and_says_why(reads):
    experiment = _started()
    reads["analysis"] = _analysis(drops=[(FORMULA, "success below pull's beyond the bound")])
    assert do_review_experiments(T0 + timedelta(seconds=601)) == 1
    experiment.refresh_from_db()
    assert experiment.dropped[0]["arm"] == FORMULA and "beyond the bound" in experiment.dropped[0]["why"]
    entry = AuditEntry.objects.get(action="experiment.drop-arm")
    assert entry.target == experiment.id and entry.actor == "superdispatch"
    # every later block of the dropped arm runs pull instead
    for block in experiments.schedule_of(experiment)[1:]:
        assert experiments.in_force(experiment, block.starts + timedelta(seconds=1)).arm == "pull"


def test_autopilot_gives_each_board_the_winner_with_an_audit_entry_naming_the_experiment(reads):
    experiment = _started(boards=("brd_a", "brd_b"))
    reads["analysis"] = _analysis(winner="pull", blocks_to_decision=0)
    do_review_experiments(T0 + timedelta(seconds=601), autopilot=True)
    experiment.refresh_from_db()
    assert experiment.state == ExperimentState.DONE and experiment.winner == "pull"
    assert dict(Board.objects.values_list("board_id", "formula")) == {"brd_a": "pull", "brd_b": "pull"}
    changes = AuditEntry.objects.filter(action="board.formula").order_by("target")
    assert [(e.target, e.before, e.after) for e in changes] == [
        (b, {"formula": None}, {"formula": "pull", "experiment": experiment.id}) for b in ("brd_a", "brd_b")
    ]
    assert {e.actor for e in changes} == {"superdispatch"}


def test_without_autopilot_the_decision_is_recorded_and_no_board_changes(reads):
    experiment = _started()
    reads["analysis"] = _analysis(winner=FORMULA, blocks_to_decision=0)
    do_review_experiments(T0 + timedelta(seconds=601))
    experiment.refresh_from_db()
    assert experiment.winner == FORMULA and experiment.decided_at is not None
    assert Board.objects.get(board_id="brd_a").formula is None
    assert not AuditEntry.objects.filter(action="board.formula").exists()


def test_the_review_tells_the_analysis_what_each_board_runs_outside_the_experiment(monkeypatch):
    """Each board's own formula, else the deployment's: the decision at the schedule's end reads
    it (pull wins where what is in place is clearly worse than pull, `winner`)."""
    seen = {}

    def analyse(*args, **kwargs):
        seen.update(kwargs)
        return _analysis()

    monkeypatch.setattr(experiment_actions.switchback, "analyse", analyse)
    _started(boards=("brd_a", "brd_b"))
    do_review_experiments(T0 + timedelta(seconds=601))
    assert seen["in_place"] == {FORMULA}
    Board.objects.filter(board_id="brd_b").update(formula="pull")
    do_review_experiments(T0 + timedelta(seconds=1201))
    assert seen["in_place"] == {FORMULA, "pull"}


def test_no_winner_at_the_schedules_end_changes_nothing_even_under_autopilot(reads):
    experiment = _started()
    do_review_experiments(T0 + timedelta(seconds=4 * 600 + 1), autopilot=True)
    experiment.refresh_from_db()
    assert experiment.state == ExperimentState.DONE and experiment.winner is None
    assert Board.objects.get(board_id="brd_a").formula is None


def test_with_a_holdback_the_decided_experiment_keeps_running_pull_one_block_in_n(reads):
    experiment = _started(holdback_every=4)
    reads["analysis"] = _analysis(winner=FORMULA, blocks_to_decision=0)
    do_review_experiments(T0 + timedelta(seconds=4 * 600 + 1), autopilot=True)
    experiment.refresh_from_db()
    assert experiment.state == ExperimentState.HOLDBACK
    arms = [
        experiments.in_force(experiment, experiment.ends_at + timedelta(seconds=600 * k + 1)).arm
        for k in range(8)
    ]
    assert arms.count("pull") == 2 and arms[:4].count("pull") == 1  # exactly one in each run of 4
    assert set(arms) == {"pull", "own"}
    # the holdback's figure is worked out after each of its blocks
    do_review_experiments(experiment.ends_at + timedelta(seconds=601))
    experiment.refresh_from_db()
    assert experiment.holdback == {"winner": FORMULA, "blocksToDecision": 0}


def test_stopping_an_experiment_is_audited_and_lets_its_boards_go():
    experiment = _started()
    do_stop_experiment(experiment.id, T0 + timedelta(seconds=10))
    experiment.refresh_from_db()
    assert experiment.state == ExperimentState.STOPPED
    assert experiments.in_force_on(["brd_a"], T0 + timedelta(seconds=20)) == {}
    assert AuditEntry.objects.filter(action="experiment.stop", target=experiment.id).exists()


def test_a_board_formula_set_by_a_person_is_audited_and_an_undeclared_one_refused():
    do_opt_in("brd_a", T0)
    do_set_board_formula("brd_a", FORMULA, T0)
    assert AuditEntry.objects.get(action="board.formula").after == {"formula": FORMULA}
    with pytest.raises(ExperimentError, match="not one of"):
        do_set_board_formula("brd_a", "nope@1", T0)


# --- The record as cards ------------------------------------------------------------------


def test_each_card_counts_once_with_its_run_its_lead_to_a_success_and_its_wait():
    ready = T0
    first = make_decision(
        card="card_1",
        created_at=ready + timedelta(seconds=2),
        ready_at=ready,
        chosen="agt_a",
        reserved_until=ready + timedelta(seconds=60),
        outcome_status="claimed",
        outcome_at=ready + timedelta(seconds=20),
        run_status="succeeded",
        run_ended_at=ready + timedelta(seconds=200),
        experiment_id="exp_x",
        experiment_block=0,
        experiment_arm=FORMULA,
    )
    # a later step of the same ladder counts nothing new
    make_decision(
        card="card_1",
        created_at=ready + timedelta(seconds=90),
        ready_at=ready,
        experiment_id="exp_x",
        experiment_block=0,
        experiment_arm=FORMULA,
    )
    make_decision(
        card="card_2",
        reason="pull-arm",
        created_at=ready + timedelta(seconds=5),
        ready_at=ready,
        outcome_status="claimed-by-other",
        outcome_by="agt_b",
        outcome_at=ready + timedelta(seconds=8),
        experiment_id="exp_x",
        experiment_block=0,
        experiment_arm="pull",
    )
    make_decision(card="card_3", experiment_id="exp_other", experiment_block=0, experiment_arm="pull")
    cards = sorted(experiments.cards_of("exp_x"), key=lambda c: c.wait_s)
    assert cards == [
        switchback.Card(ready_at=ready, succeeded=None, lead_s=None, wait_s=8.0),
        switchback.Card(ready_at=ready, succeeded=True, lead_s=200.0, wait_s=20.0),
    ]
    assert first.experiment_id == "exp_x"


def test_a_card_sent_back_by_a_failed_run_counts_once_its_first_run_and_its_lead_to_the_retry():
    # card_1 failed its first run at the stage and became ready again: the second ladder is the
    # same card, not a second one; its success is the first run's, its lead runs to the retry's
    # success. card_2 was first ready in block 0, its retry in block 1: it counts in block 0 only.
    ready, again = T0, T0 + timedelta(seconds=300)
    common = {"experiment_id": "exp_x", "experiment_arm": "pull", "reason": "pull-arm"}
    make_decision(
        card="card_1",
        created_at=ready,
        ready_at=ready,
        outcome_status="claimed-by-other",
        outcome_by="agt_b",
        outcome_at=ready + timedelta(seconds=4),
        run_status="failed",
        run_ended_at=ready + timedelta(seconds=100),
        experiment_block=0,
        **common,
    )
    make_decision(
        card="card_1",
        created_at=again,
        ready_at=again,
        outcome_status="claimed-by-other",
        outcome_by="agt_a",
        outcome_at=again + timedelta(seconds=6),
        run_status="succeeded",
        run_ended_at=again + timedelta(seconds=90),
        experiment_block=0,
        **common,
    )
    make_decision(card="card_2", created_at=ready, ready_at=ready, experiment_block=0, **common)
    make_decision(card="card_2", created_at=again, ready_at=again, experiment_block=1, **common)
    cards = sorted(experiments.cards_of("exp_x"), key=lambda c: c.wait_s or 0.0)
    assert cards == [
        switchback.Card(ready_at=ready, succeeded=None, lead_s=None, wait_s=None),
        switchback.Card(ready_at=ready, succeeded=False, lead_s=390.0, wait_s=4.0),
    ]
    assert experiments.cards_of("exp_x", first_block=1) == []


# --- manage.py experiment -----------------------------------------------------------------


def test_the_command_starts_shows_and_stops_an_experiment_each_in_the_audit_trail(fleet):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    out = StringIO()
    call_command(
        "experiment",
        "start",
        "--boards",
        "brd_a,brd_b",
        "--arms",
        f"pull,{FORMULA}",
        "--objective",
        "lead",
        "--blocks",
        "6",
        "--seed",
        "5",
        stdout=out,
    )
    experiment = Experiment.objects.get()
    assert experiment.id in out.getvalue() and "now: block 0" in out.getvalue()
    shown = StringIO()
    call_command("experiment", "status", stdout=shown)
    assert f"arms pull, {FORMULA}; objective lead; 6 blocks of 30 min" in shown.getvalue()
    call_command("experiment", "stop", experiment.id, stdout=StringIO())
    assert [e.via for e in AuditEntry.objects.filter(target=experiment.id).order_by("at", "id")] == [
        "manage.py experiment"
    ] * 2
    with pytest.raises(CommandError, match="boards: boards brd_a, brd_b share agents"):
        call_command(
            "experiment",
            "start",
            "--boards",
            "brd_a",
            "--arms",
            f"pull,{FORMULA}",
            "--objective",
            "lead",
            "--blocks",
            "6",
            stdout=StringIO(),
        )


# --- Where people see it ------------------------------------------------------------------


def _recorded_blocks(experiment: Experiment) -> None:
    """Three cards in each block, past the burn-in: the formula's succeed, pull's half do."""
    for block in experiments.schedule_of(experiment):
        for k in range(3):
            ready = block.starts + timedelta(seconds=200 + 60 * k)
            succeeded = block.arm == FORMULA or k == 0
            make_decision(
                card=f"card_{block.index}_{k}",
                created_at=ready,
                ready_at=ready,
                reason="pull-arm" if block.arm == "pull" else None,
                outcome_status="claimed-by-other",
                outcome_by="agt_a",
                outcome_at=ready + timedelta(seconds=10),
                run_status="succeeded" if succeeded else "failed",
                run_ended_at=ready + timedelta(seconds=100),
                experiment_id=experiment.id,
                experiment_block=block.index,
                experiment_arm=block.arm,
            )


def test_the_admin_page_shows_the_schedule_each_arm_with_its_interval_a_chart_and_the_guardrail(staff):
    from tests.support.admin_pages import change_url

    experiment = _started()
    _recorded_blocks(experiment)
    do_review_experiments(T0 + timedelta(seconds=2 * 600 + 1))
    experiment.refresh_from_db()
    assert experiment.analysis["blocksEnded"] == 2
    page = staff.get(change_url(experiment)).content.decode()
    assert "Each arm against pull" in page and "The guardrail" in page and "<svg" in page
    assert FORMULA in page and "Not decided yet" in page
    for block in experiment.schedule:
        assert block["starts"] in page
    listing = staff.get("/admin/records/board/").content.decode()
    assert "the deployment&#x27;s" in listing or "the deployment's" in listing


def test_is_it_helping_shows_the_experiments_measured_interval_beside_the_what_ifs_estimate(staff):
    experiment = _started()
    _recorded_blocks(experiment)
    do_review_experiments(T0 + timedelta(seconds=4 * 600 + 1))  # the schedule is over
    experiment.refresh_from_db()
    # every formula block succeeded, a third of pull's: the formula wins, its lead the same
    assert (experiment.state, experiment.winner) == (ExperimentState.DONE, FORMULA)
    # A decision on the board in the dashboard's range puts the board in "is it helping?".
    make_decision(card="card_now", created_at=timezone.now() - timedelta(minutes=5))
    page = staff.get("/admin/dashboard/").content.decode()
    assert "Measured on the fleet itself" in page
    assert f"experiment: {FORMULA} against pull" in page and experiment.id in page
    assert "+0.667 (+0.667 to +0.667)" in page  # success over pull's, with its interval


def test_a_person_gives_a_board_its_own_formula_in_the_admin_and_the_answer_shows_it(staff, api):
    from records.console.admin import formula_action_name

    do_opt_in("brd_a", T0)
    answer = staff.post(
        "/admin/records/board/",
        {"action": formula_action_name("pull"), "index": "0", "_selected_action": ["brd_a"]},
    )
    assert answer.status_code == 302
    assert Board.objects.get(board_id="brd_a").formula == "pull"
    entry = AuditEntry.objects.get(action="board.formula")
    assert (entry.actor, entry.via, entry.after) == ("op", "admin", {"formula": "pull"})
    assert api.get("/v1/boards/brd_a").json()["board"]["formula"] == "pull"
    assert "pull" in staff.get("/admin/records/board/").content.decode()


@pytest.mark.parametrize("dropped", [(), (FORMULA,), ("pull",), (FORMULA, "pull")])
def test_the_block_in_force_found_by_its_index_is_the_one_placement_finds_over_the_schedule(dropped):
    from hypothesis import given, settings, strategies as st

    arms = (FORMULA, "pull", "wait-for-better@3")
    schedule = switchback.draw_schedule(arms, starts=T0, block_seconds=600, blocks=12, seed=4)
    experiment = Experiment(
        id="exp_" + "0" * 24,
        state=ExperimentState.RUNNING,
        block_seconds=600,
        schedule=experiments.stored_schedule(schedule),
        starts_at=T0,
        ends_at=schedule[-1].ends,
        dropped=[{"arm": a, "at": "2026-11-01T00:00:00Z", "why": "t"} for a in dropped],
    )

    @settings(max_examples=200, deadline=None)
    @given(st.floats(min_value=-600, max_value=13 * 600, allow_nan=False))
    def agrees(offset):
        now = T0 + timedelta(seconds=offset)
        ours = experiments.in_force(experiment, now)
        theirs = switchback.in_force(schedule, now, dropped)
        assert (None if ours is None else (ours.block, ours.arm)) == theirs

    agrees()
