"""Request bodies: the API takes JSON, whatever content type it arrives with, bounded in depth.

`curl -d '{"seed":1}'` sends `application/x-www-form-urlencoded`, and other clients send
`text/plain` or no content type at all; refusing each with a 415 would make the documented
calls fail as pasted. So a body that is not declared `application/json` is read as JSON all
the same, and one that is not JSON is a 400 (`bad-json`) saying so and what was wrong.

No body the API takes nests deeper than a few levels, so JSON nested deeper than MAX_DEPTH is
refused before it is parsed: Python's parser recurses once a level, and a body of ten
thousand brackets would otherwise end in a RecursionError (a 500) rather than an answer.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any, NoReturn

from rest_framework import parsers
from rest_framework.exceptions import ParseError

MAX_DEPTH = 32

_ESCAPE = re.compile(r"\\.", re.S)  # inside a string: \" \\ \n \u…, taken two characters at once
_STRING = re.compile(r'"[^"]*"')  # once escapes are gone, a string ends at its next quote
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")


class UnreadableJson(ValueError):
    """The text is not JSON, or nests deeper than MAX_DEPTH; the message says which."""


def _strict_constant(name: str) -> NoReturn:
    raise UnreadableJson(f"{name} is not a JSON value")


def too_deep(text: str) -> bool:
    """Whether the arrays and objects of a JSON text nest deeper than MAX_DEPTH (brackets
    inside strings do not count). Never False where a parser would recurse deeper, valid text
    or not: up to where a parser stops, this reads the text's strings as the parser does."""
    brackets = _NOT_A_BRACKET.sub("", _STRING.sub("", _ESCAPE.sub("", text)))
    if brackets.count("[") + brackets.count("{") <= MAX_DEPTH:
        return False
    level = 0
    for bracket in brackets:
        level += 1 if bracket in "[{" else -1
        if level > MAX_DEPTH:
            return True
    return False


def loads(raw: bytes | str, encoding: str = "utf-8") -> Any:
    """The JSON value of a body; UnreadableJson when it is not text in `encoding`, not JSON
    (NaN and Infinity are not), or nested deeper than MAX_DEPTH."""
    try:
        text = raw if isinstance(raw, str) else raw.decode(encoding)
    except LookupError:
        raise UnreadableJson(f"unknown charset {encoding[:40]!r}") from None
    except UnicodeDecodeError as err:
        raise UnreadableJson(f"not {encoding} text ({err.reason} at byte {err.start})") from None
    if too_deep(text):
        raise UnreadableJson(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, parse_constant=_strict_constant)
    except UnreadableJson:
        raise
    except ValueError as err:  # JSONDecodeError, and an integer of more than 4,300 digits
        raise UnreadableJson(str(err)) from None


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, reading through `loads`: bounded in depth, and a charset it does not
    know is a 400 as any other unreadable body."""

    def parse(
        self, stream: IO[bytes], media_type: str | None = None, parser_context: dict[str, Any] | None = None
    ) -> Any:
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            return loads(stream.read(), encoding)
        except UnreadableJson as err:
            raise ParseError(f"JSON parse error - {err}") from None


class AnyTypeJSONParser(JSONParser):
    """Reads the raw body as JSON under any content type (after JSONParser, for the rest)."""

    media_type = "*/*"

    def parse(
        self, stream: IO[bytes], media_type: str | None = None, parser_context: dict[str, Any] | None = None
    ) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except ParseError as err:
            sent = f"sent as {media_type[:100]}" if media_type else "sent with no content type"
            raise ParseError(f"the body must be JSON ({sent}): {err.detail}") from None
