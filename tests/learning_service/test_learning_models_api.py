import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from learning import dataset
from learning.models import LearnedModel
from placement.learned import FEATURES
from records.models import Candidate, Decision
from tests.conftest import at
from tests.support.learning_factories import settled, trainable

pytestmark = [pytest.mark.django_db, pytest.mark.storage]

MODEL_FIELDS = {
    "id",
    "version",
    "features",
    "means",
    "stds",
    "weights",
    "bias",
    "createdAt",
    "since",
    "seed",
    "decisions",
    "firstDecisionAt",
    "lastDecisionAt",
    "iterations",
    "learningRate",
    "l2",
    "metrics",
    "target",
}
METRICS = {
    "count",
    "trainCount",
    "holdoutCount",
    "positives",
    "auc",
    "accuracy",
    "logLoss",
    "calibration",
    "trainAuc",
}


def train(api, body=None):
    return api.post(
        "/v1/models/train", json.dumps(body) if body is not None else "", content_type="application/json"
    )


def test_training_answers_the_stored_model_with_its_metrics(api):
    trainable(40)
    response = train(api, {"seed": 1})
    assert response.status_code == 201
    model = response.json()["model"]
    assert set(model) == MODEL_FIELDS
    assert re.fullmatch(r"mdl_[0-9a-f]{24}", model["id"]) and model["version"] == 1
    assert model["features"] == list(FEATURES) and len(model["weights"]) == len(FEATURES)
    assert (model["seed"], model["decisions"], model["since"]) == (1, 40, None)
    assert (model["firstDecisionAt"], model["lastDecisionAt"]) == (
        "2026-11-13T10:00:00.000Z",
        "2026-11-13T10:00:39.000Z",
    )
    metrics = model["metrics"]
    assert set(metrics) == METRICS
    assert metrics["count"] == 40 and metrics["positives"] == 20
    assert metrics["trainCount"] + metrics["holdoutCount"] == 40
    assert len(metrics["calibration"]) == 5
    assert metrics["auc"] == 1.0  # the stage record separates the outcomes perfectly
    assert api.get(f"/v1/models/{model['id']}").json() == {"model": model}


def test_each_training_is_stored_as_the_next_version(api):
    trainable(40)
    ids = [train(api, {"seed": seed}).json()["model"]["id"] for seed in (1, 2, 3)]
    listed = api.get("/v1/models").json()["models"]
    assert [(m["id"], m["version"]) for m in listed] == [(ids[2], 3), (ids[1], 2), (ids[0], 1)]


def test_the_same_rows_and_seed_give_the_same_model(api):
    trainable(40)
    first, second = (train(api, {"seed": 7}).json()["model"] for _ in range(2))
    for field in ("means", "stds", "weights", "bias", "metrics"):
        assert first[field] == second[field]


def test_training_places_nothing(api):
    trainable(40)
    before = (list(Decision.objects.values()), list(Candidate.objects.values()))
    assert train(api).status_code == 201
    assert (list(Decision.objects.values()), list(Candidate.objects.values())) == before


def test_since_trains_only_on_decisions_created_from_then(api):
    trainable(40)
    model = train(api, {"since": "2026-11-13T10:00:20Z"}).json()["model"]
    assert model["decisions"] == 20 and model["since"] == "2026-11-13T10:00:20.000Z"
    assert model["firstDecisionAt"] == "2026-11-13T10:00:20.000Z"


def test_training_reads_the_newest_decisions_up_to_the_cap(api, monkeypatch):
    monkeypatch.setattr(dataset, "MAX_DECISIONS", 30)
    monkeypatch.setattr(dataset, "CHUNK", 7)
    trainable(40)
    model = train(api).json()["model"]
    assert model["decisions"] == 30 and model["metrics"]["count"] == 30
    assert model["firstDecisionAt"] == "2026-11-13T10:00:10.000Z"
    assert model["lastDecisionAt"] == "2026-11-13T10:00:39.000Z"


def test_too_few_rows_is_a_422_and_stores_nothing(api):
    trainable(4)
    response = train(api)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "too-few-rows" and "at least 10" in error["message"]
    assert not LearnedModel.objects.exists()


def test_an_empty_log_is_a_422_too(api):
    assert train(api).json()["error"]["code"] == "too-few-rows"


def test_a_single_class_is_a_422(api):
    for n in range(20):
        settled(n, created_at=at(n))  # every hold claimed
    response = train(api)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "single-class"
    assert not LearnedModel.objects.exists()


@pytest.mark.parametrize(
    "body,code,names",
    [
        ([], "bad-body", "object"),
        ({"seed": "1"}, "bad-field", "seed"),
        ({"seed": True}, "bad-field", "seed"),
        ({"seed": -1}, "bad-field", "seed"),
        ({"seed": 1.5}, "bad-field", "seed"),
        ({"since": "last tuesday"}, "bad-field", "since"),
        ({"since": 5}, "bad-field", "since"),
        ({"colour": "blue"}, "unknown-field", "colour"),
    ],
)
def test_a_malformed_body_is_a_400_naming_it(api, body, code, names):
    trainable(40)
    response = train(api, body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert names in response.json()["error"]["message"]
    assert not LearnedModel.objects.exists()


def test_a_body_that_is_not_json_is_a_400(api):
    response = api.post("/v1/models/train", "{seed:", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad-json"


@pytest.mark.parametrize("suffix", ["", "/shadow-report"])
def test_model_ids_are_checked_then_looked_up(api, suffix):
    bad = api.get(f"/v1/models/mdl_nope{suffix}")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad-id"
    missing = api.get(f"/v1/models/mdl_{'0' * 24}{suffix}")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not-found"


def test_an_empty_store_lists_no_models(api):
    assert api.get("/v1/models").json() == {"models": []}


def test_the_train_command_draws_progress_and_stores_a_model():
    trainable(40)
    out, err = io.StringIO(), io.StringIO()
    call_command("train", "--seed", "3", stdout=out, stderr=err)
    model = LearnedModel.objects.get()
    assert (model.version, model.seed) == (1, 3)
    assert f"stored {model.id} as version 1 (target claimed): 40 rows" in out.getvalue()
    progress = err.getvalue()
    assert "reading decisions" in progress and "40/40" in progress
    assert "fitting" in progress and "[" + "#" * 30 + "] 500/500" in progress


def test_the_train_command_says_why_it_refused():
    with pytest.raises(CommandError, match="too-few-rows"):
        call_command("train", stdout=io.StringIO(), stderr=io.StringIO())
    with pytest.raises(CommandError, match="--since"):
        call_command("train", "--since", "soon", stdout=io.StringIO(), stderr=io.StringIO())
