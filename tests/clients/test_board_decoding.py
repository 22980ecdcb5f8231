"""The board read's decoder: a well-formed board is read as it states its stages and cards, and
a board out of shape is told apart, naming the path of what is wrong.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from hypothesis import given, settings, strategies as st

from superdispatch.clients import superpipeline_wire as wire
from superdispatch.clients.http import _error_code
from superdispatch.clients.shape import ErrorBody, ShapeError

from . import bodies

ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.floats(allow_nan=False),
    st.just(""),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)
GOOD_TIMES = [
    "2026-11-13T10:03:12.000Z",
    "2026-11-13T10:03:12Z",
    "2026-11-13T12:03:12+02:00",
    "2026-11-13T10:03:12.123456789Z",
    "2026-11-13 10:03:12Z",
    "2026-11-13T10:03:12.5-00:30",
]
BAD_TIMES = ["2026-11-13T10:03:12", "2026-11-13", "13/11/2026", ""]
TIMES = st.sampled_from(GOOD_TIMES)
IDS = st.from_regex(r"[a-z_0-9]{1,6}", fullmatch=True)
HOLDS = st.fixed_dictionaries({"agentId": IDS, "reservedUntil": TIMES})
FIELDS = {
    "id": IDS,
    "title": st.one_of(st.just(""), st.text(max_size=4)),
    "currentStageKey": IDS,
    "state": st.sampled_from(["submitted", "working", "completed"]),
    "priority": st.integers(-3, 3),
    "readyAt": TIMES,
    "createdAt": TIMES,
    "updatedAt": TIMES,
    "attemptCount": st.integers(0, 4),
}
OPTIONAL = {
    "delegateAgentId": st.one_of(st.none(), IDS),
    "claimedAt": st.one_of(st.none(), TIMES),
    "archivedAt": st.one_of(st.none(), TIMES),
    "reservation": st.one_of(st.none(), HOLDS),
}
WELL_FORMED = st.fixed_dictionaries(FIELDS, optional=OPTIONAL)


# A value of each kind a field might wrongly hold, and KeyError for a field left out: few
# enough that every field meets every one of them within the examples drawn.
OFF_VALUES = [
    None,
    "",
    "x",
    True,
    False,
    0,
    1,
    -1,
    1.0,
    1.5,
    [],
    ["x"],
    {},
    {"x": 1},
    KeyError,
    *BAD_TIMES,
    *GOOD_TIMES[:2],
]


@st.composite
def one_off(draw):
    """A well-formed card but for one field: missing, or another value of any kind."""
    card = draw(WELL_FORMED)
    key = draw(st.sampled_from([*FIELDS, *OPTIONAL, "reservation.agentId", "reservation.reservedUntil"]))
    value = draw(st.sampled_from(OFF_VALUES))
    where = card
    if key.startswith("reservation."):
        where = card["reservation"] = draw(HOLDS)
        key = key.removeprefix("reservation.")
    if value is KeyError:
        where.pop(key, None)
    else:
        where[key] = value
    return card


def cards(odd: bool):
    return st.one_of(WELL_FORMED, one_off(), ODD) if odd else WELL_FORMED


def boards(odd: bool):
    top = {
        "boardId": st.just("brd_1"),
        "tenantId": st.just("tnt_1"),
        "name": st.just("Review"),
        "stages": st.just([bodies.stage()]),
    }
    listed = st.lists(cards(odd), max_size=5)
    if not odd:
        return st.fixed_dictionaries({**top, "cards": listed})
    return st.one_of(
        st.fixed_dictionaries({**top, "cards": listed}, optional={"error": ODD, "extra": ODD}),
        st.fixed_dictionaries(
            {"tenantId": top["tenantId"], "name": top["name"]},
            optional={"cards": ODD, "stages": ODD, "boardId": ODD},
        ),
        ODD,
    )


def read(body):
    """What the client makes of a 2xx body: the board, `refused` (an error body, as
    `Http.call` tells it), or the ShapeError's message."""
    try:
        return wire.board(json.dumps(body).encode())
    except ErrorBody:
        return "refused"
    except ShapeError as err:
        return "refused" if _error_code(body) is not None else str(err)


UTC = timezone.utc
# Each of GOOD_TIMES as a moment in UTC (nine digits of a second are rounded to six).
MOMENTS = dict(
    zip(
        GOOD_TIMES,
        [
            datetime(2026, 11, 13, 10, 3, 12, tzinfo=UTC),
            datetime(2026, 11, 13, 10, 3, 12, tzinfo=UTC),
            datetime(2026, 11, 13, 10, 3, 12, tzinfo=UTC),
            datetime(2026, 11, 13, 10, 3, 12, 123457, tzinfo=UTC),
            datetime(2026, 11, 13, 10, 3, 12, tzinfo=UTC),
            datetime(2026, 11, 13, 10, 33, 12, 500000, tzinfo=UTC),
        ],
    )
)


def at(text: str | None) -> datetime | None:
    return None if text is None else MOMENTS[text]


def as_stated(card: dict) -> tuple:
    hold = card.get("reservation")
    return (
        card["id"],
        card["title"],
        card["currentStageKey"],
        card["state"],
        card.get("delegateAgentId"),
        card["priority"],
        at(card["readyAt"]),
        at(card.get("claimedAt")),
        at(card.get("archivedAt")),
        None if hold is None else (hold["agentId"], at(hold["reservedUntil"])),
        at(card["createdAt"]),
        at(card["updatedAt"]),
        card["attemptCount"],
    )


def stated(card) -> tuple:
    hold = card.reservation
    return (
        card.card_id,
        card.title,
        card.stage_key,
        card.state,
        card.delegate_agent_id,
        card.priority,
        card.ready_at,
        card.claimed_at,
        card.archived_at,
        None if hold is None else (hold.agent_id, hold.reserved_until),
        card.created_at,
        card.updated_at,
        card.attempt_count,
    )


@settings(max_examples=600, deadline=None)
@given(boards(odd=True))
def test_a_board_is_read_as_it_states_its_cards_or_refused_or_out_of_shape(body):
    got = read(body)
    if isinstance(body, dict) and "error" in body:
        assert got == "refused"
    elif isinstance(got, str):
        assert got.startswith("board")
    else:
        assert [stated(c) for c in got.cards] == [as_stated(c) for c in body["cards"]]


@settings(max_examples=1500, deadline=None)
@given(one_off())
def test_a_card_one_field_off_is_read_as_it_states_it_or_its_path_named(card):
    got = read(bodies.board(cards=[card]))
    if isinstance(got, str):
        assert got.startswith("board.cards[0]")
    else:
        [read_card] = got.cards
        assert stated(read_card) == as_stated(card)


@settings(max_examples=200, deadline=None)
@given(boards(odd=False))
def test_every_well_formed_board_is_read(body):
    got = read(body)
    assert [stated(c) for c in got.cards] == [as_stated(c) for c in body["cards"]]


def test_a_board_with_a_refusal_in_it_is_refused():
    assert read({**bodies.board(), "error": {"code": "nope"}}) == "refused"


def test_times_come_back_in_utc():
    got = read(bodies.board(cards=[bodies.card(readyAt="2026-11-13T12:03:12+02:00")]))
    assert got.cards[0].ready_at == datetime(2026, 11, 13, 10, 3, 12, tzinfo=timezone.utc)
    assert got.cards[0].ready_at.tzinfo is timezone.utc


def test_an_empty_requires_falls_back_to_the_stages_owner():
    got = read(bodies.board(stages=[bodies.stage(requires={"all": [], "any": []}, owner="code-review")]))
    assert got.stages[0].requires.all == ("code-review",) and got.stages[0].requires.any == ()
