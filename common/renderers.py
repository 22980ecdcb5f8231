"""The API's renderers: DRF's JSON, which also takes an answer already written as JSON text,
and its browsable API for staff signed in to the admin (common.auth).

Imports no view: DRF loads the renderers named in REST_FRAMEWORK while `rest_framework.views`
is being imported."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.conf import settings
from rest_framework import renderers
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.utils.encoders import JSONEncoder

if TYPE_CHECKING:
    from rest_framework.request import Request

NO_ROUTE = "No route"  # the catch-all view's name (common.views.NoRoute)

# A value's JSON text exactly as DRF's JSON renderer writes an answer without indent (its own
# encoder and settings, read from the renderer): pieces of one answer written apart and joined
# read the same as the whole written at once.
encode = JSONEncoder(
    ensure_ascii=renderers.JSONRenderer.ensure_ascii,
    allow_nan=not renderers.JSONRenderer.strict,
    separators=(renderers.SHORT_SEPARATORS if renderers.JSONRenderer.compact else renderers.LONG_SEPARATORS),
).encode


class Written:
    """An answer already written as JSON text, by `encode` and joined: a page of decisions,
    most of whose pieces are written once a process (records.api.pages)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def value(self) -> Any:
        """The answer as parsed JSON, for a renderer that writes it its own way."""
        return json.loads(self.text)


class JSONRenderer(renderers.JSONRenderer):
    """DRF's JSON renderer, which answers a `Written` answer's text as it is (indented, when
    asked for, as DRF indents any answer)."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: dict[str, Any] | None = None,
    ) -> bytes:
        if isinstance(data, Written):
            if self.get_indent(accepted_media_type, renderer_context or {}) is None:
                # As DRF escapes them in any answer: JSON that is a strict JavaScript subset.
                return data.text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()
            data = data.value()
        rendered: bytes = super().render(data, accepted_media_type, renderer_context)
        return rendered


class BrowsableAPI(BrowsableAPIRenderer):
    """DRF's browsable renderer, whose breadcrumbs leave out the prefixes that are no route
    (`/v1/`, `/v1/suggestions/`): each would read as the catch-all's 404.

    Its page is made readable by assistive technology where DRF's base template cannot be
    extended to say so (axe-core, tests/browser): the page names its language, it has one
    `main` landmark (DRF nests a second inside the first), and each `pre`, which scrolls
    sideways under a long answer, can take the keyboard's focus."""

    def get_breadcrumbs(self, request: Request) -> list[tuple[str, str]]:
        return [(name, url) for name, url in super().get_breadcrumbs(request) if name != NO_ROUTE]

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: dict[str, Any] | None = None,
    ) -> str:
        page: str = super().render(data, accepted_media_type, renderer_context)
        return (
            page.replace("<html>", f'<html lang="{settings.LANGUAGE_CODE}">', 1)
            .replace('<div class="content-main" role="main" ', '<div class="content-main" ', 1)
            .replace('<pre class="prettyprint">', '<pre class="prettyprint" tabindex="0">')
        )
