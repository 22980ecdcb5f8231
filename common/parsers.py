"""Request bodies: the API takes JSON, whatever content type it arrives with.

`curl -d '{"seed":1}'` sends `application/x-www-form-urlencoded`, and other clients send
`text/plain` or no content type at all; refusing each with a 415 would make the documented
calls fail as pasted. So a body that is not declared `application/json` is read as JSON all
the same, and one that is not JSON is a 400 (`bad-json`) saying so and what was wrong.
"""
from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class AnyTypeJSONParser(JSONParser):
    """Reads the raw body as JSON under any content type (after JSONParser, for the rest)."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except ParseError as err:
            sent = f"sent as {media_type}" if media_type else "sent with no content type"
            raise ParseError(f"the body must be JSON ({sent}): {err.detail}") from None
