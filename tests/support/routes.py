"""A row behind every id the operator API's routes take, for the tests that call every route."""

from __future__ import annotations

from records.models import Board, Experiment
from tests.conftest import T0
from tests.support.factories import make_decision, make_suggestion
from tests.support.learning_factories import stored_model, trainable


def rows_behind_every_route() -> dict[str, str]:
    """A board, a decision on it, a suggestion, a model and rows enough to train; their ids."""
    Board.objects.create(board_id="brd_a", enabled=True, created_at=T0, updated_at=T0)
    decision = make_decision(board="brd_a", card="card_1")
    suggestion = make_suggestion()
    model = stored_model()
    trainable(40)
    experiment = finished_experiment()
    return {
        "board": "brd_a",
        "card": "card_1",
        "decision": decision.id,
        "suggestion": suggestion.id,
        "model": model.id,
        "experiment": experiment.id,
    }


def finished_experiment() -> Experiment:
    """An experiment on brd_a, over: a row behind an experiment's id that runs nothing now."""
    return Experiment.objects.create(
        boards=["brd_a"],
        arms=["pull", "idle-stage-success-lru@3"],
        block_seconds=1800,
        seed=1,
        objective="success",
        burn_in_seconds=120,
        guardrail={"successDrop": 0.05, "leadRatio": 1.15},
        schedule=[],
        state="done",
        starts_at=T0,
        ends_at=T0,
        created_at=T0,
    )
