"""The browsable API: DRF's, for staff signed in to the admin (common.auth).

Imports no view: DRF loads the renderers named in REST_FRAMEWORK while `rest_framework.views`
is being imported."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from rest_framework.renderers import BrowsableAPIRenderer

if TYPE_CHECKING:
    from rest_framework.request import Request

NO_ROUTE = "No route"  # the catch-all view's name (common.views.NoRoute)


class BrowsableAPI(BrowsableAPIRenderer):
    """DRF's browsable renderer, whose breadcrumbs leave out the prefixes that are no route
    (`/v1/`, `/v1/suggestions/`): each would read as the catch-all's 404.

    Its page is made readable by assistive technology where DRF's base template cannot be
    extended to say so (axe-core, tests/browser): the page names its language, it has one
    `main` landmark (DRF nests a second inside the first), and each `pre`, which scrolls
    sideways under a long answer, can take the keyboard's focus."""

    def get_breadcrumbs(self, request: Request) -> list[tuple[str, str]]:
        return [(name, url) for name, url in super().get_breadcrumbs(request) if name != NO_ROUTE]

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: dict[str, Any] | None = None) -> str:
        page: str = super().render(data, accepted_media_type, renderer_context)
        return (page.replace("<html>", f'<html lang="{settings.LANGUAGE_CODE}">', 1)
                .replace('<div class="content-main" role="main" ', '<div class="content-main" ', 1)
                .replace('<pre class="prettyprint">', '<pre class="prettyprint" tabindex="0">'))
