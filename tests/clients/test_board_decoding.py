"""The board read's two decoders agree: the C one takes only what the Python one takes.

`wire.plain_board` reads a 2xx body's bytes with msgspec and gives up (None) on anything
out of the ordinary; the body then goes the usual way (`_error_code`, `wire.board`), which
names what is wrong. So whatever the fast one returns must be exactly what the usual way
returns, and on the boards SuperPipeline really sends it must not give up.
"""
from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from superdispatch.clients import superpipeline_wire as wire
from superdispatch.clients.http import _error_code
from superdispatch.clients.shape import ShapeError

from . import bodies

ODD = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.floats(allow_nan=False), st.just(""),
                st.text(max_size=3), st.lists(st.integers(), max_size=2),
                st.dictionaries(st.text(max_size=2), st.integers(), max_size=1))
GOOD_TIMES = ["2026-11-13T10:03:12.000Z", "2026-11-13T10:03:12Z", "2026-11-13T12:03:12+02:00",
              "2026-11-13T10:03:12.123456789Z", "2026-11-13 10:03:12Z", "2026-11-13T10:03:12.5-00:30"]
BAD_TIMES = ["2026-11-13T10:03:12", "2026-11-13", "13/11/2026", ""]
TIMES = st.sampled_from(GOOD_TIMES)
IDS = st.from_regex(r"[a-z_0-9]{1,6}", fullmatch=True)
HOLDS = st.fixed_dictionaries({"agentId": IDS, "reservedUntil": TIMES})
FIELDS = {
    "id": IDS, "title": st.one_of(st.just(""), st.text(max_size=4)), "currentStageKey": IDS,
    "state": st.sampled_from(["submitted", "working", "completed"]),
    "priority": st.integers(-3, 3), "readyAt": TIMES, "createdAt": TIMES, "updatedAt": TIMES,
    "attemptCount": st.integers(0, 4)}
OPTIONAL = {"delegateAgentId": st.one_of(st.none(), IDS), "claimedAt": st.one_of(st.none(), TIMES),
            "archivedAt": st.one_of(st.none(), TIMES), "reservation": st.one_of(st.none(), HOLDS)}
WELL_FORMED = st.fixed_dictionaries(FIELDS, optional=OPTIONAL)


# A value of each kind a field might wrongly hold, and KeyError for a field left out: few
# enough that every field meets every one of them within the examples drawn.
OFF_VALUES = [None, "", "x", True, False, 0, 1, -1, 1.0, 1.5, [], ["x"], {}, {"x": 1}, KeyError,
              *BAD_TIMES, *GOOD_TIMES[:2]]


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
    top = {"boardId": st.just("brd_1"), "tenantId": st.just("tnt_1"), "name": st.just("Review"),
           "stages": st.just([bodies.stage()])}
    listed = st.lists(cards(odd), max_size=5)
    if not odd:
        return st.fixed_dictionaries({**top, "cards": listed})
    return st.one_of(
        st.fixed_dictionaries({**top, "cards": listed}, optional={"error": ODD, "extra": ODD}),
        st.fixed_dictionaries({"tenantId": top["tenantId"], "name": top["name"]},
                              optional={"cards": ODD, "stages": ODD, "boardId": ODD}),
        ODD)


def the_usual_way(body):
    """What `Http.call` makes of a 2xx body the fast decoder gave up on: a refusal, the board,
    or the ShapeError `wire.board` names."""
    if _error_code(body) is not None:
        return "refused"
    try:
        return wire.board(body)
    except ShapeError:
        return "bad-shape"


@settings(max_examples=600, deadline=None)
@given(boards(odd=True))
def test_what_the_fast_decoder_returns_is_what_the_usual_way_returns(body):
    fast = wire.plain_board(json.dumps(body).encode())
    if fast is not None:
        assert fast == the_usual_way(body)


@settings(max_examples=1500, deadline=None)
@given(one_off())
def test_a_card_one_field_off_is_read_fast_only_as_the_usual_way_reads_it(card):
    body = bodies.board(cards=[card])
    fast = wire.plain_board(json.dumps(body).encode())
    if fast is not None:
        assert fast == the_usual_way(body)


@settings(max_examples=200, deadline=None)
@given(boards(odd=False))
def test_the_fast_decoder_takes_every_well_formed_board(body):
    usual = the_usual_way(body)
    if usual not in ("refused", "bad-shape"):
        assert wire.plain_board(json.dumps(body).encode()) == usual


def test_a_board_with_a_refusal_in_it_goes_the_usual_way():
    assert wire.plain_board(json.dumps({**bodies.board(), "error": {"code": "nope"}}).encode()) is None


def test_times_come_back_in_utc_as_the_usual_way_gives_them():
    body = bodies.board(cards=[bodies.card(readyAt="2026-11-13T12:03:12+02:00")])
    fast = wire.plain_board(json.dumps(body).encode())
    assert fast == wire.board(body)
    assert fast.cards[0].ready_at.utcoffset().total_seconds() == 0
