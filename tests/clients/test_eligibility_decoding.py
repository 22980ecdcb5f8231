"""The eligibility read's decoder: what it makes of every answer, well formed or not, and the
recent reads it gives back again (`AlikeReads`) only for an answer it would read the same.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from placement import Rules, decide
from placement.facts import AgentVerdict
from superdispatch.clients import superpipeline_wire as wire
from superdispatch.clients.http import _error_code
from superdispatch.clients.shape import ErrorBody, ShapeError
from tests.support.placement import NOW, board, roster_row

from . import bodies

ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.just(""),
    st.text(max_size=3),
    st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)


def read(content: bytes, reads: wire.AlikeReads | None = None):
    """What the client makes of a 2xx body: the verdicts, `refused` (an error body, as
    `Http.call` tells it) or `bad-shape`; by a client that has read nothing before, unless
    `reads` is given."""
    try:
        return (reads or wire.AlikeReads()).verdicts(content)
    except ErrorBody:
        return "refused"
    except ShapeError:
        try:
            return "refused" if _error_code(json.loads(content)) is not None else "bad-shape"
        except ValueError:
            return "bad-shape"


def as_stated(agents: list) -> list:
    """The verdicts as the answer states them."""
    return [
        (a["agentId"], a.get("principalId"), a["eligible"], tuple(a.get("reasons") or ())) for a in agents
    ]


def stated(verdicts) -> list:
    return [(v.agent_id, v.principal_id, v.eligible, v.reasons) for v in verdicts]


REASONS = st.lists(st.sampled_from(["capability_mismatch", "grant_denied", "", "x"]), max_size=3)


def verdicts(odd: bool):
    usual = st.fixed_dictionaries(
        {"agentId": st.from_regex(r"agt_[a-z0-9]{1,4}", fullmatch=True), "eligible": st.booleans()},
        optional={
            "principalId": st.one_of(st.none(), st.from_regex(r"prn_[a-z]{1,3}", fullmatch=True)),
            "reasons": REASONS if odd else REASONS.filter(lambda r: "" not in r),
            "extra": ODD,
        },
    )
    if not odd:
        return usual
    broken = st.dictionaries(st.sampled_from(["agentId", "principalId", "eligible", "reasons"]), ODD)
    return st.one_of(usual, broken, ODD)


def answers(odd: bool):
    top = {"cardId": st.just("card_1"), "stageKey": st.just("review")}
    agents = st.lists(verdicts(odd), max_size=6)
    if odd:
        return st.one_of(
            st.fixed_dictionaries({**top, "agents": agents}, optional={"error": ODD, "requires": ODD}),
            st.fixed_dictionaries(top, optional={"agents": ODD, "error": ODD}),
            ODD,
        )
    return st.fixed_dictionaries({**top, "agents": agents})


@settings(max_examples=400, deadline=None)
@given(answers(odd=True))
def test_an_answer_is_read_as_it_states_its_verdicts_or_refused_or_out_of_shape(body):
    got = read(json.dumps(body).encode())
    if isinstance(body, dict) and "error" in body:
        assert got == "refused"
    elif got != "bad-shape":
        assert stated(got) == as_stated(body["agents"])
        assert all(type(v.reasons) is tuple for v in got)


@settings(max_examples=200, deadline=None)
@given(answers(odd=False))
def test_every_well_formed_answer_is_read(body):
    assert stated(read(json.dumps(body).encode())) == as_stated(body["agents"])


def test_the_contracts_example_is_read():
    assert stated(read(json.dumps(bodies.eligibility()).encode())) == as_stated(
        bodies.eligibility()["agents"]
    )


@pytest.mark.parametrize(
    "body, said",
    [
        ({"error": {"code": "forbidden"}, "agents": []}, "refused"),
        ({"agents": None}, "eligibility.agents: Expected `array`, got `null`"),
        (
            {"agents": [{"agentId": "", "eligible": True}]},
            "eligibility.agents[0].agentId: Expected `str` of length >= 1",
        ),
        (
            {"agents": [{"agentId": "agt_a", "eligible": True, "reasons": None}]},
            "eligibility.agents[0].reasons: Expected `array`, got `null`",
        ),
        (
            {"agents": [{"agentId": "agt_a", "eligible": 1}]},
            "eligibility.agents[0].eligible: Expected `bool`, got `int`",
        ),
        ([], "eligibility: Expected `object`, got `array`"),
        ("not json", "eligibility: body is not JSON"),
    ],
)
def test_a_refusal_or_a_bad_shape_is_told_with_the_path_of_what_is_wrong(body, said):
    content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    try:
        wire.AlikeReads().verdicts(content)
    except ErrorBody:
        got = "refused"
    except ShapeError as err:
        got = str(err)
    assert got == said


def test_placement_decides_alike_on_the_decoders_verdicts_and_on_its_own():
    """The client hands placement the decoder's structs as they are, not `AgentVerdict`s:
    a decision made from them is the one made from the same verdicts as named tuples."""
    agents = [
        {"agentId": f"agt_{n}", "principalId": f"prn_{n}", "eligible": not reasons, "reasons": reasons}
        for n, reasons in [
            ("ada", []),
            ("bob", []),
            ("cyd", ["concurrency_reached"]),
            ("dan", ["grant_denied"]),
            ("eve", ["capability_mismatch"]),
            ("fay", []),
            ("gus", ["capability_mismatch"]),
        ]
    ]
    decoded = read(json.dumps({**bodies.eligibility(), "agents": agents}).encode())
    assert decoded is not None and not any(isinstance(v, AgentVerdict) for v in decoded)
    own = tuple(AgentVerdict(v.agent_id, v.principal_id, v.eligible, v.reasons) for v in decoded)
    roster = tuple(roster_row(a) for a in ("agt_ada", "agt_bob", "agt_cyd", "agt_dan"))
    made = [
        decide(board(roster=roster, eligibility=verdicts), Rules(), NOW).to_record()
        for verdicts in (decoded, own)
    ]
    assert made[0] == made[1]
    assert made[0]["chosen"] in ("agt_ada", "agt_bob")
    assert len(made[0]["candidates"]) == len(agents)


def _answer(card_id: str, agents: list[dict]) -> bytes:
    return json.dumps({**bodies.eligibility(), "cardId": card_id, "agents": agents}).encode()


AGENTS = [
    {"agentId": f"agt_{n}", "principalId": f"prn_{n}", "eligible": True, "reasons": []}
    for n in ("ada", "bob", "cyd")
]


def test_an_answer_whose_verdicts_are_alike_gives_back_the_very_same_tuple():
    """Placement indexes a read once a tuple, so every card read alike must share it."""
    reads = wire.AlikeReads()
    first = reads.verdicts(_answer("card_1", AGENTS))
    assert reads.verdicts(_answer("card_2", AGENTS)) is first  # another card, alike verdicts
    busy = [*AGENTS[:2], {**AGENTS[2], "eligible": False, "reasons": ["concurrency_reached"]}]
    changed = reads.verdicts(_answer("card_3", busy))
    assert changed is not first and changed == read(_answer("card_3", busy))
    assert reads.verdicts(_answer("card_4", AGENTS)) is first  # still among the recent


def test_only_the_last_few_reads_are_kept():
    reads = wire.AlikeReads(size=2)
    answers = [_answer("card_1", AGENTS[:n]) for n in (1, 2, 3)]
    first, *_ = [reads.verdicts(a) for a in answers]
    again = reads.verdicts(answers[0])
    assert again == first and again is not first  # pushed out by the two after it


def test_a_bad_answer_is_never_kept_nor_mistaken_for_a_good_one():
    reads = wire.AlikeReads()
    bad = [{"agentId": "", "eligible": True}]
    assert read(_answer("card_1", bad), reads) == "bad-shape"
    assert read(_answer("card_2", bad), reads) == "bad-shape"  # not remembered as if decoded
    good = reads.verdicts(_answer("card_3", AGENTS))
    refusal = json.dumps({"error": {"code": "forbidden"}, "agents": AGENTS}).encode()
    assert read(refusal, reads) == "refused"
    assert reads.verdicts(_answer("card_4", AGENTS)) is good


def test_an_answer_alike_is_known_by_its_last_bytes_only_when_they_are_its_agents():
    """A recent read's verdicts at the end of a body are taken as its `agents` only when the
    rest of the body says so; anything else is read whole, to what it says."""
    seen = json.dumps(AGENTS)
    reads = wire.AlikeReads()
    first = reads.verdicts(_answer("card_1", AGENTS))
    assert reads.verdicts(f'{{"cardId": "card_2", "agents": {seen}}}\n'.encode()) is first
    # The last, as json reads it.
    assert reads.verdicts(f'{{"agents": [], "agents":{seen}}}'.encode()) is first
    for body in (
        f'{{"cardId": "card_2", "other": {seen}}}',  # not the agents
        f'{{"agents": [], "other": {seen}}}',
        f'{{"agents": 0, "other": {seen}}}',
        f'{{"agents": 1, "other": {seen}}}',
        f'{{"agents":-{seen}}}',
        f'{{"agents":1{seen}}}',
        f'{{"agents":"{seen}}}',
        f'{{"error": "forbidden", "agents": {seen}}}',
        f'["agents", {seen}}}',
        f"{seen}}}",
        f'{{"agents": {seen}}}}}',
    ):
        got = read(body.encode(), reads)
        assert got is not first and got == read(body.encode()), body


HEAD_PIECES = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        '"agents"',
        '"error"',
        '"cardId"',
        '"x"',
        "0",
        "1",
        "-",
        "null",
        '"',
        '{"agents": ',
        ', "agents": ',
        '"agents":',
        '{"cardId": "card_1", "agents": ',
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(HEAD_PIECES, max_size=8).map("".join))
def test_a_body_ending_in_a_recent_reads_verdicts_is_read_as_a_new_client_reads_it(head):
    reads = wire.AlikeReads()
    first = reads.verdicts(_answer("card_1", AGENTS))
    body = f"{head}{json.dumps(AGENTS)}}}".encode()
    got = read(body, reads)
    assert got == read(body)
    if got == first:
        assert got is first  # a body alike is never decoded again
