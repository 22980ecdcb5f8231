"""The filters are declared once; every table the rest of the service reads is derived from them."""

import pytest

from placement import filtering, filters, learned
from placement.filtering import Filter, Tag, tables
from tests.support.placement import board, decided


def test_the_tables_derived_from_the_declarations_are_the_ones_the_service_has_always_read():
    t = tables()
    assert [f.name for f in t.in_order] == list(filtering.REASON_CODES)
    assert filtering.STATION_FILTERS == ("isolation", "model", "tools", "credentials")
    assert t.identity is filters.ROSTER and t.off_the_set == (filters.ROSTER.rejected,)
    # why_nobody: the load-only sets and the hold that wins
    assert t.names(Tag.LOAD) == {"capacity", "idle", "held"}
    assert t.names(Tag.NO_ROOM) == {"capacity", "idle"}
    assert t.names(Tag.HOLD) == {"held"} and t.names(Tag.HEALTH) == {"health"}
    # learned routing's poolBusy, and the suggestions' rules
    assert t.codes_of(Tag.LOAD) == ("at-capacity", "not-idle", "holding-another")
    assert t.codes_of(Tag.HEALTH) == ("unhealthy",)
    assert t.codes_of(Tag.UNRELIABLE) == ("unhealthy", "recently-no-show")
    assert t.codes_of(Tag.CAPABILITY) == ("capability-missing",)
    assert t.codes_of(Tag.STATION) == (
        "isolation-too-weak",
        "model-mismatch",
        "tool-missing",
        "credential-missing",
    )
    assert list(t.codes) == [
        "not-on-roster",
        "capability-missing",
        "grant-denied",
        "not-claimable",
        "isolation-too-weak",
        "model-mismatch",
        "tool-missing",
        "credential-missing",
        "policy-denied",
        "policy-unread",
        "no-principal",
        "unhealthy",
        "at-capacity",
        "not-idle",
        "holding-another",
        "recently-no-show",
        "passed-over",
    ]


def test_the_tables_are_worked_out_once_and_again_only_when_the_declarations_change():
    before = tables()
    assert tables() is before
    extra = Filter(
        "extra", ("extra-reason",), 155, (), lambda facts, pool, rules, now: None, lambda pool, read: ()
    )
    with filtering.declared(extra):
        during = tables()
        assert during is not before and tables() is during
        assert filtering.REASON_CODES["extra"] == "extra-reason"
    assert tables() is not during and "extra" not in filtering.REASON_CODES


def _noop(facts, pool, rules, now):
    return None


def _passes(pool, read):
    return ()


@pytest.mark.parametrize(
    "declaration, complaint",
    [
        (Filter("held", ("held-twice",), 999, (), _noop, _passes), "already declared"),
        (Filter("twin", ("twin-reason",), filters.IDLE.order, (), _noop, _passes), "share order"),
        (Filter("twin", ("not-idle",), 999, (), _noop, _passes), "share reason code"),
        (Filter("first", ("first-reason",), 1, (), _noop, _passes), "identity"),
        (Filter("second", ("second-reason",), 999, {Tag.IDENTITY}, _noop, _passes), "identity"),
        (Filter("Bad Name", ("bad-name",), 999, (), _noop, _passes), "name"),
        (Filter("quoted", ("it's",), 999, (), _noop, _passes), "reason code"),
    ],
)
def test_a_declaration_that_would_make_the_tables_ambiguous_is_refused(declaration, complaint):
    with pytest.raises(ValueError, match=complaint):
        with filtering.declared(declaration):
            tables()
    assert "twin" not in filtering.REASON_CODES and tables().identity is filters.ROSTER


def test_a_filters_words_come_one_for_each_of_its_reason_codes_and_reach_the_explanation():
    with pytest.raises(ValueError, match="words for 1 of its 2 reason codes"):
        Filter("wordy", ("wordy-one", "wordy-two"), 999, (), _noop, _passes, words=("one only",))
    with filtering.declared(Filter("wordy", ("wordy-one",), 999, (), _noop, _passes, words=("is wordy",))):
        assert tables().words["wordy-one"] == "is wordy"
    assert "wordy-one" not in tables().words


def test_a_filter_that_reads_an_unread_fact_passes_everyone_unchecked_and_one_that_skips_is_not_run():
    unread = Filter(
        "unreadable",
        ("unreadable-reason",),
        155,
        (),
        lambda *_: filtering.UNREAD,
        lambda pool, read: pytest.fail("a filter whose fact is unread is not called"),
    )
    skipped = Filter(
        "skipped",
        ("skipped-reason",),
        156,
        (),
        lambda *_: filtering.SKIP,
        lambda pool, read: pytest.fail("a skipped filter is not called"),
    )
    with filtering.declared(unread, skipped):
        verdicts = decided(board()).candidate("agt_ada").filters
    assert verdicts[-1] == filtering.FilterResult("unreadable", True, unchecked=True)
    assert "skipped" not in [v.filter for v in verdicts]


def test_a_read_shared_by_several_filters_runs_once_a_card():
    calls = []

    def counted(facts, pool, rules, now):
        calls.append(facts.card.card_id)
        return frozenset()

    first = Filter("first", ("first-reason",), 155, (), counted, lambda pool, read: ())
    second = Filter("second", ("second-reason",), 156, (), counted, lambda pool, read: ())
    with filtering.declared(first, second):
        decided(board())
    assert calls == ["card_1042"]


def test_learned_routing_counts_a_load_filter_as_busy():
    candidates = [
        {
            "filters": [
                {"filter": "roster", "passed": True},
                {"filter": "idle", "passed": False, "reason": "not-idle"},
            ]
        },
        {
            "filters": [
                {"filter": "roster", "passed": True},
                {"filter": "grant", "passed": False, "reason": "grant-denied"},
            ]
        },
    ]
    assert learned.pool(candidates)["busy"] == 1
