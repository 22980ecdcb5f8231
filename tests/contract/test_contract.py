"""The operator API against its own OpenAPI schema: schemathesis, `--checks all`, every operation
(the relay's webhook included), over a live server with a store that holds a board, settled
decisions, a suggestion, a trained model, an experiment reviewed once and entries of the audit
trail, so that the stateful phase follows real ids and every answer's schema is checked against
a real answer. It calls
with a named token that has every scope. It must end with no failure.

Its exceptions are in schemathesis.toml and hooks.py beside this file, each with its reason.
The number of examples is bounded (CONTRACT_EXAMPLES, 25 by default) and the seed fixed
(CONTRACT_SEED), so a run takes a minute or two and a finding can be replayed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from access import actions as access_actions
from access.audit import SERVICE
from common.scopes import SCOPES
from learning import actions as learning_actions
from placement.formulas import DEFAULT
from records.store.actions.boards import do_opt_in
from records.store.actions.experiments import Plan, do_review_experiments, do_start_experiment
from tests.support.factories import T0, make_decision, make_suggestion
from tests.support.learning_factories import trainable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

pytestmark = [pytest.mark.contract, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def stocked():
    do_opt_in("brd_a", T0)
    make_decision(
        board="brd_a",
        card="card_1",
        chosen="agt_ada",
        candidates=[
            {"agent": "agt_ada", "total": 2.0},
            {"agent": "agt_cyd", "failing": {"idle": "not-idle"}},
        ],
    )
    make_suggestion()
    trainable(40)
    learning_actions.do_train(None, 1, now=T0)
    # An experiment one block in, reviewed, so its analysis is an answer checked too.
    do_start_experiment(
        Plan(
            boards=("brd_a",),
            arms=(DEFAULT.recorded, "pull"),
            objective="success",
            block_seconds=600,
            blocks=4,
            seed=1,
        ),
        T0,
        rosters_read={"brd_a": {"agt_ada"}},
    )
    do_review_experiments(T0 + timedelta(seconds=601))
    _, secret = access_actions.do_create_token("contract", list(SCOPES), by=SERVICE, now=T0)
    return secret


def test_the_api_keeps_its_contract(stocked, live_server):
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(HERE / "schemathesis.toml"),
        "run",
        f"{live_server.url}/v1/schema",
        "--header",
        f"Authorization: Bearer {stocked}",
        "--checks",
        "all",
        "--max-examples",
        os.environ.get("CONTRACT_EXAMPLES", "25"),
        "--seed",
        os.environ.get("CONTRACT_SEED", "13"),
        "--no-color",
    ]
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.contract.hooks",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    report = run.stdout + run.stderr
    assert run.returncode == 0, report
    assert "Operations:       21 selected / 21 total" in report, report
    summary = re.search(r"(\d+) generated, (\d+) passed", report)
    assert summary and summary[1] == summary[2] and int(summary[1]) > 500, report  # no failure
