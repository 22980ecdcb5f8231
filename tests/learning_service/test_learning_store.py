import pytest

from learning.core.rows import examples, rows
from learning.store import decision_examples
from tests.support.learning_records import candidate, decision


@pytest.mark.parametrize(
    "status,chosen,by",
    [
        ("claimed", "agt_ada", "agt_ada"),
        ("expired", "agt_ada", None),
        ("claimed-by-other", "agt_ada", "agt_bob"),
        ("claimed", None, "agt_bob"),  # nobody chosen, in the any-match tier
        ("superseded", "agt_ada", None),
        ("not-reserved", "agt_ada", None),
    ],
)
def test_training_reads_exactly_the_examples_of_the_dataset_rows(status, chosen, by):
    record = decision(
        [
            candidate(
                "agt_ada",
                history={"runs": 4, "stageRecord": 0.8},
                terms={"stageRecord": 0.8, "successRate": 0.6, "sinceLastDispatchS": 90},
            ),
            candidate("agt_bob", source="direct"),
            candidate("agt_cyd", fails={"idle": "not-idle"}),
            candidate("agt_dee", fails={"roster": "not-on-roster"}),
        ],
        chosen=chosen,
        status=status,
        by=by,
    )
    assert list(decision_examples(record)) == list(examples(rows(record)))
