"""The operator API's base view, its schema and docs pages, and its unknown paths.

Every view under /v1 checks the operator's credential (the REST_FRAMEWORK setting's
authentication and permissions: the credential, then the scope its method needs, common.scopes)
before it reads anything else of the request; only /healthz and the relay's webhook opt out,
on their own views.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiYamlRenderer
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from common.auth import OperatorTokenAuthentication, StaffSessionAuthentication
from common.errors import Refusal, bad_request, json_404
from common.renderers import NO_ROUTE
from common.scopes import NONE_NEEDED, READ

if TYPE_CHECKING:
    from django.http import HttpResponse
    from rest_framework.renderers import BaseRenderer
    from rest_framework.request import Request

    # The mixins below are read by mypy as the APIView they are mixed into; at run time they
    # stay plain classes, so that they add nothing to a view's MRO but their own methods.
    from rest_framework.views import APIView as _View
else:
    _View = object

# The two classes below carry comments, not docstrings: drf-spectacular would print a base
# view's docstring as the description of every route.


class CredentialFirst(_View):
    # Settles who asks before anything else of the request is read. APIView negotiates the
    # answer's format (the Accept header, the query string) before it authenticates, so a
    # refused call could be answered 406 or 400; here the credential is checked first, and a
    # refusal is answered bare, without the Allow header DRF adds.

    #
    # Then one rule for bodies: a route that takes none (every route but those that set
    # `takes_body`) refuses any, `{}` included, before it reads its query or writes anything,
    # so a body a caller meant for another route is never silently ignored (docs/api.md).
    takes_body = False

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        self.perform_authentication(request)
        self.check_permissions(request)
        allowed = request.method.lower() in self.http_method_names and hasattr(
            self, request.method.lower()
        )  # else the method's own 405 answers
        if allowed and not self.takes_body and request.body:
            raise bad_request("unexpected-body", f"{request.method} on this route takes no body")
        super().initial(request, *args, **kwargs)

    def finalize_response(
        self, request: Request, response: HttpResponse, *args: Any, **kwargs: Any
    ) -> HttpResponse:
        if isinstance(response, Refusal):
            return response
        return super().finalize_response(request, response, *args, **kwargs)


class OperatorView(CredentialFirst, APIView):
    # A route of the operator API: a credential, or a bare 401; then the scope each method
    # needs, declared by the route in `scopes` ({"GET": READ, …}), or a 403 naming it.
    scopes: dict[str, str | None] = {}


class NoRoute(OperatorView):
    """Any other path under /v1: refused like every route without the token, and with it,
    answered as Django answers a path it has no route for."""

    schema = None  # not a route of the API
    name = NO_ROUTE  # the browsable API leaves it out of its breadcrumbs
    # Any credential is answered the 404 of a path with no route, whatever it sends.
    scopes = {m: NONE_NEEDED for m in ("GET", "POST", "PUT", "PATCH", "DELETE", "TRACE")}
    takes_body = True

    @property
    def default_response_headers(self) -> dict[str, str]:
        return {}  # allows no method: there is nothing here

    def _no_such_route(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponse:
        return json_404(request)

    get = post = put = patch = delete = head = options = trace = _no_such_route


class FirstRenderer(BaseContentNegotiation):
    """Answers in the view's first renderer whatever the request's Accept header asks (the
    relay's webhook, which answers JSON; Prometheus, which asks for its own text formats)."""

    def select_renderer(
        self, request: Request, renderers: list[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        return renderers[0], renderers[0].media_type


class ErrorsAsJson(_View):
    # A page that is not JSON (the schema's YAML, the docs' HTML) answers its errors in the
    # API's error shape all the same, rather than as YAML or an HTML error page.

    def finalize_response(
        self, request: Request, response: HttpResponse, *args: Any, **kwargs: Any
    ) -> HttpResponse:
        if isinstance(response, Response) and response.status_code >= 400:
            request.accepted_renderer, request.accepted_media_type = (JSONRenderer(), "application/json")
            response.template_name = None
        return super().finalize_response(request, response, *args, **kwargs)


class Schema(ErrorsAsJson, CredentialFirst, SpectacularAPIView):
    """The OpenAPI schema; who may read it is SPECTACULAR_SETTINGS' SERVE_AUTHENTICATION.
    YAML by default; JSON for `?format=json`, as every tool's tutorial asks, or for an
    Accept header that asks for JSON."""

    scopes = {"GET": READ}
    formats: dict[str, type[BaseRenderer]] = {"json": OpenApiJsonRenderer, "yaml": OpenApiYamlRenderer}

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[BaseRenderer, str]:
        wanted = request.query_params.get("format")
        if wanted is None:
            found: tuple[BaseRenderer, str] = super().perform_content_negotiation(request, force)
            return found
        if wanted not in self.formats:
            raise bad_request("bad-format", "format is json or yaml")
        renderer = self.formats[wanted]()
        return renderer, renderer.media_type


class Docs(ErrorsAsJson, CredentialFirst, SpectacularSwaggerSplitView):
    """Swagger UI over the schema, for the same readers. Its script is a file of its own
    (`?script`), not inline, so the Content-Security-Policy (common.edge) allows no inline
    script; and the page keeps the opener policy of every other page (same-origin):
    drf-spectacular's `unsafe-none` serves OAuth2 sign-in pop-ups, which these docs have none of."""

    metadata_class = None  # OPTIONS: a 405, as a page has no fields to describe (not a 500)

    @extend_schema(exclude=True)  # a page for people, not a route of the API
    def get(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponse:
        # drf-spectacular leaves this view's get unannotated.
        response: HttpResponse = super().get(request, *args, **kwargs)  # type: ignore[no-untyped-call]
        if "Cross-Origin-Opener-Policy" in response:
            del response["Cross-Origin-Opener-Policy"]
        return response

    scopes = {"GET": READ}


class OperatorTokenScheme(OpenApiAuthenticationExtension):
    """The operator token in the OpenAPI schema: HTTP bearer."""

    target_class = OperatorTokenAuthentication
    name = "operatorToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer"}


class StaffSessionScheme(OpenApiAuthenticationExtension):
    """A staff user's admin session in the OpenAPI schema: the session cookie, for people
    browsing the API (writes also carry the CSRF token, as X-CSRFToken)."""

    target_class = StaffSessionAuthentication
    name = "staffSession"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "cookie", "name": settings.SESSION_COOKIE_NAME}
