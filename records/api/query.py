"""What the operator API reads from a request: query strings and bodies as DRF serializers, and
ids in the path. Every bad value is a 400 naming it, and nothing is read past the first."""

from __future__ import annotations

import re
from typing import Any, Mapping

from rest_framework import serializers
from rest_framework.settings import api_settings

from common.errors import bad_request, not_found
from records.ids import is_id
from records.models import SUGGESTION_KINDS
from records.serializers import TimeInput

BOARD_ID = re.compile(r"brd_[A-Za-z0-9_-]{1,100}")
CARD_ID = re.compile(r"card_[A-Za-z0-9_-]{1,100}")
DIGITS = re.compile(r"-?[0-9]+")
AGENT_ID = re.compile(r"agt_[A-Za-z0-9_-]{1,100}")


def board_id(value: str) -> str:
    if not BOARD_ID.fullmatch(value):
        raise bad_request("bad-board-id", "a board id looks like brd_ followed by letters, digits, _ or -")
    return value


def card_id(value: str) -> str:
    if not CARD_ID.fullmatch(value):
        raise bad_request("bad-card-id", "a card id looks like card_ followed by letters, digits, _ or -")
    return value


def by_id(rows, prefix: str, value: str, noun: str):
    """The row with this id: 400 when the id has the wrong shape, 404 when there is none."""
    if not is_id(prefix, value):
        raise bad_request("bad-id", f"a {noun} id is {prefix}_ and 24 hex digits")
    row = rows.filter(pk=value).first()
    if row is None:
        raise not_found(f"{noun} {value}")
    return row


# --- Fields: each states its rule in its help text, which the 400 quotes ---------------------


class Matching(serializers.RegexField):
    """A string matching a pattern in full, exactly as given (never trimmed)."""

    def __init__(self, pattern: re.Pattern, **kwargs):
        self.pattern = pattern
        # Anchored for the schema, whose patterns match anywhere unless told otherwise.
        super().__init__(f"^{pattern.pattern}$", trim_whitespace=False, **kwargs)

    def to_internal_value(self, data) -> str:
        if not isinstance(data, str) or not self.pattern.fullmatch(data):
            self.fail("invalid")
        return data


class OneOf(serializers.ChoiceField):
    def __init__(self, choices, **kwargs):
        super().__init__(choices, help_text="one of " + ", ".join(choices), **kwargs)


class _Ranged(serializers.IntegerField):
    """An integer from `min_value` to `max_value`, its help text the rule a 400 states."""

    def __init__(self, *, min_value: int, max_value: int, **kwargs):
        super().__init__(
            min_value=min_value,
            max_value=max_value,
            help_text=f"an integer from {min_value} to {max_value}",
            **kwargs,
        )


class Integer(_Ranged):
    """An integer in a range, written in digits alone (DRF's own takes "5.0" and " 5" too)."""

    def to_internal_value(self, data) -> int:
        if not isinstance(data, str) or not DIGITS.fullmatch(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class JsonInteger(_Ranged):
    """A JSON integer in a range: never a string, a boolean or a float such as 2.0."""

    def to_internal_value(self, data) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


def _first_error(serializer: serializers.Serializer, names, code: str) -> None:
    """Raise the first of these names' errors as a 400: `<name> must be <its rule>`."""
    for name in names:
        if name in serializer.errors:
            raise bad_request(code, f"{name} must be {serializer.fields[name].help_text}")
    for error in serializer.errors.get(api_settings.NON_FIELD_ERRORS_KEY, ()):
        raise bad_request(code, str(error))


# --- Query strings ------------------------------------------------------------------------


class Query(serializers.Serializer):
    """A route's query string. Each parameter is given once at most; an unknown, repeated or
    malformed one is a 400 naming it, the first in the query's own order."""

    @classmethod
    def read(cls, query) -> dict[str, Any]:
        """The route's parameters from a QueryDict, defaults filled in."""
        given = cls(data={name: query.getlist(name)[0] for name in query.keys()})
        given.is_valid()
        for name in query.keys():
            if name not in given.fields:
                raise bad_request(
                    "unknown-parameter",
                    f"unknown parameter {name!r}; this route takes: " + ", ".join(sorted(given.fields)),
                )
            if len(query.getlist(name)) > 1:
                raise bad_request("bad-parameter", f"{name} given more than once")
            _first_error(given, (name,), "bad-parameter")
        _first_error(given, (), "bad-parameter")
        return dict(given.validated_data)


class NoQuery(Query):
    """A route that takes no parameter."""


class DecisionsQuery(Query):
    board = Matching(BOARD_ID, required=False, help_text="a board id (brd_…)")
    card = Matching(CARD_ID, required=False, help_text="a card id (card_…)")
    agent = Matching(
        AGENT_ID,
        required=False,
        help_text="an agent id (agt_…): the decisions "
        "that considered it, each with `agent`, its own verdict and record",
    )
    before = TimeInput(required=False)
    limit = Integer(min_value=1, max_value=200, default=50)

    def validate(self, attrs: Mapping[str, Any]) -> Mapping[str, Any]:
        if "card" in attrs and "board" not in attrs:
            raise serializers.ValidationError("card needs board")
        return attrs


STATES = ("open", "dismissed", "resolved", "all")


class SuggestionsQuery(Query):
    board = Matching(BOARD_ID, required=False, help_text="a board id (brd_…)")
    kind = OneOf(SUGGESTION_KINDS, required=False)
    state = OneOf(STATES, default="open")


# --- Bodies -------------------------------------------------------------------------------


class Body(serializers.Serializer):
    """A JSON object body of optional fields. An unknown field is a 400 naming it; then the
    first malformed one, in the order the fields are declared."""

    @classmethod
    def read(cls, body: Any) -> dict[str, Any]:
        """The body's fields, defaults filled in."""
        given = cls(data=body)
        if not isinstance(body, dict):
            raise bad_request(
                "bad-body",
                "the body is a JSON object: {" + ", ".join(f"{name}?" for name in given.fields) + "}",
            )
        unknown = sorted(set(body) - set(given.fields))
        if unknown:
            raise bad_request(
                "unknown-field", f"unknown field {unknown[0]!r}; the body takes " + ", ".join(given.fields)
            )
        if not given.is_valid():
            _first_error(given, given.fields, "bad-field")
        return dict(given.validated_data)
