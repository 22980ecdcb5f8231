"""A client generated from the live schema, as a user's tooling would make one:
openapi-python-client (pinned in requirements.txt), run against a live server over a recorded
sandbox run (the demo, its policy on, placed by the in-process loop on a virtual clock). It lists
boards, lists and reads decisions (with `?agent=`), lists and dismisses a suggestion, reads the
dataset in both formats and lists the audit trail; every answer must parse into the client's typed
fields, none into `additional_properties` (where the schema left a key undeclared).

The client is generated into a temporary folder on each run rather than kept in the repository:
the schema is the contract, and a kept copy would only show that an old schema once generated.
The one setting it is generated with, `content_type_overrides`, is the one docs/api.md gives
users: the dataset's NDJSON read as bytes, since openapi-python-client parses one content type
per status and the default format is NDJSON.
"""

from __future__ import annotations

import importlib
import json
import logging
import subprocess
import sys
from pathlib import Path

import attrs
import httpx
import pytest

from access import actions as access_actions
from access.audit import SERVICE
from common.scopes import SCOPES
from records.models import Decision, Suggestion
from tests.support.factories import T0
from tests.support.world import make_world

CONFIG = Path(__file__).resolve().parent / "openapi-python-client.yaml"
PACKAGE = "superdispatch_client"

pytestmark = [pytest.mark.contract, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def recorded():
    logging.getLogger("superdispatch").setLevel(logging.WARNING)
    world = make_world("demo", arrivals=True, sweep_seconds=10, policy="on", candidates="all")
    world.opt_in(*(b.id for b in world.suite.scenario.boards))
    world.sweep()
    world.sim.run(8 * 60, on_tick=world.drive(10))
    assert Decision.objects.filter(outcome_status="claimed").exists()
    assert Suggestion.objects.filter(dismissed_at__isnull=True, resolved_at__isnull=True).exists()
    _, secret = access_actions.do_create_token("client", list(SCOPES), by=SERVICE, now=T0)
    return secret


@pytest.fixture
def client_package(recorded, live_server, tmp_path, monkeypatch):
    """The generated package, imported, and a client of it signed in with a named token."""
    schema = httpx.get(
        f"{live_server.url}/v1/schema?format=json",
        headers={"Authorization": f"Bearer {recorded}"},
        timeout=30,
    )
    assert schema.status_code == 200
    (tmp_path / "openapi.json").write_bytes(schema.content)
    run = subprocess.run(
        [
            str(Path(sys.executable).with_name("openapi-python-client")),
            "generate",
            "--path",
            str(tmp_path / "openapi.json"),
            "--output-path",
            str(tmp_path / PACKAGE),
            "--config",
            str(CONFIG),
            "--meta",
            "none",
            "--fail-on-warning",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    monkeypatch.syspath_prepend(str(tmp_path))
    package = importlib.import_module(PACKAGE)
    yield (
        package,
        package.AuthenticatedClient(
            base_url=live_server.url,
            token=recorded,
            raise_on_unexpected_status=True,
            timeout=httpx.Timeout(30),
        ),
    )
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def undeclared(value, path="answer") -> list[str]:
    """Where a parsed answer put keys the schema does not declare. A model that declares no
    field of its own is a map (`probabilities` by agent, an audit entry's changed fields), whose
    keys are its values' names, not undeclared fields."""
    found = []
    if attrs.has(type(value)) and hasattr(value, "additional_properties"):
        names = [f.name for f in attrs.fields(type(value))]
        if names != ["additional_properties"] and value.additional_properties:
            found.append(f"{path}: {sorted(value.additional_properties)}")
        for name in names:
            if name != "additional_properties":
                found += undeclared(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found += undeclared(item, f"{path}[{n}]")
    return found


def test_a_generated_client_reads_every_answer_into_typed_fields(client_package):
    _, client = client_package
    models = importlib.import_module(f"{PACKAGE}.models")

    def call(group, operation, **kwargs):
        module = importlib.import_module(f"{PACKAGE}.api.{group}.{operation}")
        answer = module.sync(client=client, **kwargs)
        assert not isinstance(answer, models.Error), (operation, answer)
        assert undeclared(answer, operation) == []
        return answer

    boards = call("boards", "list_boards").boards
    assert {b.board_id for b in boards} >= {"brd_review"} and all(b.enabled for b in boards)

    decisions = call("decisions", "list_decisions", limit=200).decisions
    held = next(d for d in decisions if d.reservation is not None and d.chosen is not None)
    assert isinstance(held.tier, models.Tier) and isinstance(held.tier.name, models.TierName)
    assert any(
        d.outcome is not None and isinstance(d.outcome.status, models.OutcomeStatus) for d in decisions
    )
    assert any(d.reservation is None for d in decisions)  # a nullable record reads as None
    scored = next(c for d in decisions for c in d.candidates if c.score is not None)
    assert isinstance(scored.score.terms, models.ScoreTerms)
    assert isinstance(scored.score.terms.success_rate, float)
    assert any(isinstance(c.policy, models.PolicyVerdict) for d in decisions for c in d.candidates)

    one = call("decisions", "get_decision", decision_id=held.id).decision
    assert one.id == held.id and one.explanation

    by_agent = call("decisions", "list_decisions", agent=held.chosen).decisions
    assert by_agent and all(isinstance(d.agent, models.AgentVerdict) for d in by_agent)
    assert any(d.agent.verdict == models.VerdictEnum.CHOSEN for d in by_agent)
    assert all(d.agent.record.candidate.agent_id == held.chosen for d in by_agent)

    suggestions = call("suggestions", "list_suggestions").suggestions  # open, as the API's default
    assert suggestions and all(isinstance(s.kind, models.SuggestionKind) for s in suggestions)
    dismissed = call("suggestions", "dismiss_suggestion", suggestion_id=suggestions[0].id).suggestion
    assert dismissed.dismissed_at is not None

    # The dataset's default format, NDJSON, arrives as bytes; each line is a typed row.
    ndjson = call("dataset", "get_dataset")
    lines = ndjson.payload.read().decode().splitlines()
    assert lines
    rows = [models.DatasetRow.from_dict(json.loads(line)) for line in lines]
    assert all(undeclared(row, "row") == [] for row in rows)
    assert {type(r.outcome) for r in rows} == {models.OutcomeStatus}
    # format=json is one document of the same rows.
    document = call("dataset", "get_dataset", format_=models.GetDatasetFormat.JSON)
    dataset = models.Dataset.from_dict(json.loads(document.payload.read()))
    assert undeclared(dataset, "dataset") == [] and len(dataset.rows) == len(rows)
    assert dataset.schema == 2

    entries = call("audit", "list_audit_entries").audit
    assert any(e.action == "suggestion.dismiss" for e in entries), [e.action for e in entries]
    assert all(isinstance(e.actor_kind, models.ActorKindEnum) for e in entries)
