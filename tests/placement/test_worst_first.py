"""The lab's worst-first formula (a fixture, never SuperDispatch's own) holds the agent the
documented formula ranks last, so the switchback's guardrail has a harmful arm to drop."""

from placement import Rules, decide, formulas
from tests.support.placement import NOW, board, run
from tests.support.worst_first import WORST_FIRST, worst_first_declared


def test_worst_first_holds_the_agent_the_documented_formula_ranks_last_and_is_declared_only_inside():
    facts = board(
        "agt_ada",
        "agt_bob",
        runs={
            "prn_ada": tuple(run("prn_ada", True) for _ in range(6)),
            "prn_bob": tuple(run("prn_bob", False) for _ in range(6)),
        },
    )
    assert decide(facts, Rules(), NOW).chosen == "agt_ada"
    with worst_first_declared():
        assert decide(facts, Rules(formula=WORST_FIRST.recorded), NOW).chosen == "agt_bob"
    assert formulas.named(WORST_FIRST.recorded) is None
