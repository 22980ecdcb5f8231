"""Decisions as the operator API answers them, written as JSON text for a page at a time.

A decision weighs every agent of the workspace: on a thousand agents, a page of twenty is some
twenty thousand candidates and 5 MB of JSON. Presented through the serializers candidate by
candidate, from model instances, and encoded whole, such a page cost the web server about
400 ms of CPU (bench/decisions_page.py). The answer is the same, byte for byte, made this way:

- a page's candidate rows are read in one query as value rows (`records.store.pages`), each
  presented by `CandidateSerializer`, as before;
- a candidate a mark stands for is the same record in every decision of its roll, at the same
  position: each is presented and encoded once a process (`_marked`), by the same serializer;
- the decision's other fields are presented by its serializer, and its explanation worked out
  from the whole record, as before; the JSON text is then written around the candidates' text,
  each piece encoded as the JSON renderer encodes an answer (`common.renderers`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import cached_property, lru_cache
from types import SimpleNamespace
from typing import Callable, Iterable

from common.renderers import Written, encode
from records.api.explain import explain
from records.models import Decision, Roll
from records.serializers import CandidateSerializer, DecisionSerializer
from records.store import agents, marks
from records.store.pages import candidate_rows, candidates_of

CANDIDATES = "candidates"
_present_candidate = CandidateSerializer().to_representation


class _Fields(DecisionSerializer):
    """A decision's fields but its candidates, in the answer's order (the serializer's own)."""

    @cached_property
    def _plan(self) -> list[tuple[str, Callable, Callable | None]]:
        return [step for step in super()._plan if step[0] != CANDIDATES]


_present_fields = _Fields().to_representation
# The fields answered before `candidates`; the rest, then `explanation` (and `agent`), after.
_NAMES = [step[0] for step in DecisionSerializer()._plan]
_BEFORE = frozenset(_NAMES[: _NAMES.index(CANDIDATES)])


class Presented:
    """One candidate as answered: its record, and that record's JSON text."""

    __slots__ = ("record", "text", "row")

    def __init__(self, row) -> None:
        self.row = row  # the columns it was presented from (agents.verdict reads them)
        self.record = _present_candidate(row)
        self.text = encode(self.record)


@lru_cache(maxsize=8)
def _marked(digest: str) -> tuple[tuple[Presented, Presented], ...]:
    """Every candidate a mark against this roll may stand for, by position: (incapable,
    capable). A roll is named by the digest of its agents and never changes."""
    return tuple(
        tuple(
            Presented(SimpleNamespace(**marks.off_set_columns("", position, agent_id, principal_id, capable)))
            for capable in (False, True)
        )
        for position, (agent_id, principal_id) in enumerate(Roll.agents_of(digest))
    )


def _candidates(decision: Decision, rows: list) -> list[Presented]:
    table = _marked(decision.roll_id) if decision.roll_marks else ()
    return candidates_of(
        decision, [Presented(row) for row in rows], lambda position, capable: table[position][capable]
    )


def _text(decision: Decision, fields: dict, candidates: list[Presented], agent_id: str | None) -> str:
    """The decision's JSON text as ExplainedDecisionSerializer answers it (with `agent`, what
    it made of that agent, as a list read with `?agent=` answers each)."""
    before = {k: v for k, v in fields.items() if k in _BEFORE}
    after = {k: v for k, v in fields.items() if k not in _BEFORE}
    after["explanation"] = explain({**fields, CANDIDATES: [c.record for c in candidates]})
    if agent_id is not None:
        found = next(c for c in candidates if c.row.agent_id == agent_id)
        after["agent"] = {
            "agentId": agent_id,
            **agents.verdict(found.row, decision.chosen),
            "record": found.record,
        }
    return (
        encode(before)[:-1]
        + f',"{CANDIDATES}":['
        + ",".join(c.text for c in candidates)
        + "],"
        + encode(after)[1:]
    )


class _Written:
    """The newest decisions' texts, by decision id, each with the text of its other fields.

    A decision's candidates are written with it, in one transaction, and never change; its
    explanation is worked out from them and its other fields. So while those fields read the
    same (a hold and an outcome change them), the whole text does too, and a page read again,
    as the newest page is by every client, costs the read of its decisions alone."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.texts: OrderedDict[tuple[str, str | None], tuple[str, str]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple[str, str | None], fields_text: str) -> str | None:
        with self.lock:
            found = self.texts.get(key)
            if found is None or found[0] != fields_text:
                return None
            self.texts.move_to_end(key)
            return found[1]

    def put(self, key: tuple[str, str | None], fields_text: str, text: str) -> None:
        with self.lock:
            self.texts[key] = (fields_text, text)
            self.texts.move_to_end(key)
            while len(self.texts) > self.size:
                self.texts.popitem(last=False)

    def clear(self) -> None:
        """Forget every text: for a store emptied under a running process (the tests')."""
        with self.lock:
            self.texts.clear()


# About 300 KB a decision of a thousand candidates: a page of twenty and some more, a process.
WRITTEN = _Written(64)


def _texts(page: list[Decision], agent_id: str | None) -> list[str]:
    fields = [_present_fields(d) for d in page]
    keys = [encode(f) for f in fields]
    texts = [WRITTEN.get((d.id, agent_id), key) for d, key in zip(page, keys)]
    missing = [d.id for d, text in zip(page, texts) if text is None]
    if missing:
        rows = candidate_rows(missing)
        for at, d in enumerate(page):
            if texts[at] is None:
                texts[at] = _text(d, fields[at], _candidates(d, rows.get(d.id, [])), agent_id)
                WRITTEN.put((d.id, agent_id), keys[at], texts[at])
    return texts


def decisions(page: Iterable[Decision], agent_id: str | None = None) -> Written:
    """`{"decisions": [...]}`, newest first as the page is ordered."""
    return Written('{"decisions":[' + ",".join(_texts(list(page), agent_id)) + "]}")


def decision(one: Decision) -> Written:
    """`{"decision": {...}}`."""
    return Written('{"decision":' + _texts([one], None)[0] + "}")
