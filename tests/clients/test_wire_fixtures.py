"""Every fixed SuperPipeline answer of the client's tests, through its decoder.

The property tests beside this one draw bodies at random; this one feeds each fixed answer:
the contract's examples (`bodies.py`), the variants the client's tests read, and the answers
out of shape they refuse. Each is read, refused (an error body), or out of shape, as it says.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest

from superdispatch.clients import superpipeline_wire as wire
from superdispatch.clients.http import _error_code
from superdispatch.clients.shape import ErrorBody, ShapeError

from . import bodies

HOLD = {"agentId": "agt_ada", "reservedUntil": "2026-11-13T10:04:12.000Z"}
SIGN_OFF = bodies.stage(key="sign-off", ownerKind="human", owner="usr_1", requires=None, placement=None)
CARDS = [
    {},
    {"reservation": HOLD},
    {"state": "completed"},
    {"currentStageKey": "sign-off"},
    {"currentStageKey": "gone"},
    {"archivedAt": "2026-11-13T10:03:50.000Z"},
    {"state": "working", "delegateAgentId": "agt_bo", "claimedAt": "2026-11-13T10:03:30Z"},
]
VERDICTS = [
    {
        "agentId": f"agt_{n:03d}",
        "principalId": f"prn_{n:03d}" if n % 5 else None,
        "eligible": n % 3 > 0,
        "reasons": [] if n % 3 else ["grant_denied"],
    }
    for n in range(200)
]

# (the answer's shape, whether it is read (else refused or out of shape), a name, the body)
FIXTURES = [
    ("board", True, "contract", bodies.board()),
    ("board", True, "no-cards", bodies.board(cards=[])),
    (
        "board",
        True,
        "every-card-field",
        bodies.board(
            cards=[
                bodies.card(
                    delegateAgentId="agt_bo",
                    priority=3,
                    claimedAt="2026-11-13T10:03:30.000+00:00",
                    reservation=HOLD,
                    attemptCount=2,
                )
            ]
        ),
    ),
    (
        "board",
        True,
        "requires-any",
        bodies.board(stages=[bodies.stage(requires={"all": ["code-review"], "any": ["py", "go"]})]),
    ),
    *[
        (
            "board",
            True,
            f"requires-{name}",
            bodies.board(stages=[bodies.stage(requires=requires, placement=None)]),
        )
        for name, requires in (("null", None), ("empty", {"all": [], "any": []}), ("bare", {}))
    ],
    (
        "board",
        True,
        "cards-of-every-kind",
        bodies.board(
            stages=[bodies.stage(), SIGN_OFF],
            cards=[bodies.card(id=f"card_{i}", **over) for i, over in enumerate(CARDS)],
        ),
    ),
    (
        "board",
        True,
        "times-with-offsets",
        bodies.board(
            cards=[bodies.card(readyAt="2026-11-13T12:03:12+02:00", createdAt="2026-11-13T10:03:12.5-00:30")]
        ),
    ),
    ("board", False, "refused-in-a-200", {**bodies.board(), "error": {"code": "nope"}}),
    *[("board", False, f"bad-shape-{i}", body) for i, body in enumerate(bodies.bad_boards())],
    ("eligibility", True, "contract", bodies.eligibility()),
    ("eligibility", True, "nobody", {**bodies.eligibility(), "agents": []}),
    ("eligibility", True, "reasons-left-out", {"agents": [{"agentId": "agt_ada", "eligible": True}]}),
    ("eligibility", True, "a-workspace", {**bodies.eligibility(), "agents": VERDICTS}),
    # The contract's `reasons` is a list: a null is no list.
    (
        "eligibility",
        False,
        "reasons-null",
        {"agents": [{"agentId": "agt_ada", "eligible": True, "reasons": None}]},
    ),
    ("eligibility", False, "no-agents", {"cardId": "card_1042", "stageKey": "review"}),
    ("eligibility", False, "refused-in-a-200", {"error": {"code": "forbidden"}, "agents": []}),
    ("eligibility", False, "empty-agent-id", {"agents": [{"agentId": "", "eligible": True}]}),
    (
        "eligibility",
        False,
        "empty-reason",
        {"agents": [{"agentId": "agt_ada", "eligible": False, "reasons": [""]}]},
    ),
    ("eligibility", False, "a-list", [bodies.eligibility()]),
]

DECODERS: dict[str, Callable[[bytes], Any]] = {
    "board": wire.board,
    "eligibility": lambda content: wire.AlikeReads().verdicts(content),
}


def outcome(decode: Callable[[bytes], Any], body: Any) -> Any:
    """What the client makes of a 2xx body: the read, `refused` or `bad-shape`."""
    try:
        return decode(json.dumps(body).encode())
    except ErrorBody:
        return "refused"
    except ShapeError:
        return "refused" if _error_code(body) is not None else "bad-shape"


@pytest.mark.parametrize(
    "shape, read, name, body", FIXTURES, ids=[f"{shape}-{name}" for shape, _, name, _ in FIXTURES]
)
def test_every_fixed_answer_is_read_or_told_apart(shape, read, name, body):
    got = outcome(DECODERS[shape], body)
    if read:
        assert got not in ("refused", "bad-shape")
    else:
        assert got == ("refused" if name == "refused-in-a-200" else "bad-shape")
