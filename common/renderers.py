"""The browsable API: DRF's, for staff signed in to the admin (common.auth).

Imports no view: DRF loads the renderers named in REST_FRAMEWORK while `rest_framework.views`
is being imported."""
from __future__ import annotations

from rest_framework.renderers import BrowsableAPIRenderer

NO_ROUTE = "No route"  # the catch-all view's name (common.views.NoRoute)


class BrowsableAPI(BrowsableAPIRenderer):
    """DRF's browsable renderer, whose breadcrumbs leave out the prefixes that are no route
    (`/v1/`, `/v1/suggestions/`): each would read as the catch-all's 404."""

    def get_breadcrumbs(self, request):
        return [(name, url) for name, url in super().get_breadcrumbs(request) if name != NO_ROUTE]
