"""The event relay's deliveries: verified, deduplicated, answered fast, acted on by workers."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import time
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from kombu.exceptions import OperationalError as KombuOperationalError
from redis.exceptions import RedisError
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from common import parsers
from common.errors import ApiError, bad_request, error_body, unavailable
from common.schema import error
from common.times import parse_time
from common.views import FirstRenderer
from records.api.query import BOARD_ID, CARD_ID
from records.models import Board, RelayOutcome
from records.store.actions.relay import do_note_delivery, do_note_relay_claim, do_note_relay_outcome
from superdispatch import tasks

log = logging.getLogger("superdispatch.loop")
# The task queue (the broker) or the cache refusing: Redis restarting, or unreachable.
QUEUE_DOWN = (KombuOperationalError, RedisError)
MAX_SKEW_S = 300
MAX_BODY = 64 * 1024
LOOK_DELAY_S = 2  # other events: look at the board this much later, once for a burst
CLAIM_EVENTS = ("card.claimed", "card.advanced")  # each names the agent that took the card
# Unix seconds in ASCII digits, of a sane length: `str.isdigit` would take `²` and a number
# of 400 digits, which `int()` refuses or the clock cannot compare with.
TIMESTAMP = re.compile(r"[0-9]{1,12}")
DELIVERY = re.compile(r"[!-~]{1,200}")  # visible ASCII: an id to store and log as it came
MAX_TS = 64  # an event's own `ts` (the lag's start) longer than this is not a time


def signature_valid(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """Whether `sha256=<hex>` is the HMAC-SHA256 of `<timestamp>.<body>`, in constant time."""
    if not signature.isascii():  # compare_digest compares ASCII strings only
        return False
    expected = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest("sha256=" + expected.hexdigest(), signature)


def verified_body(request, now_s: float) -> bytes:
    """The raw body of a signed, fresh delivery; anything else is refused with 401."""
    try:
        length = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        length = MAX_BODY + 1
    if length > MAX_BODY:
        raise ApiError(413, "too-large", f"a delivery is at most {MAX_BODY} bytes")
    timestamp = request.headers.get("X-Treaty-Timestamp", "")
    signature = request.headers.get("X-Treaty-Signature", "")
    body = request.body  # a chunked one too, read at the edge up to the API's limit
    if len(body) > MAX_BODY:
        raise ApiError(413, "too-large", f"a delivery is at most {MAX_BODY} bytes")
    if not TIMESTAMP.fullmatch(timestamp) or abs(now_s - int(timestamp)) > MAX_SKEW_S:
        raise ApiError(
            401,
            "stale-or-missing-timestamp",
            "the delivery's timestamp is missing, not Unix seconds, or more than 300 s from now",
        )
    if not signature_valid(settings.SUPERDISPATCH.relay_secret, timestamp, body, signature):
        raise ApiError(401, "bad-signature", "the delivery's signature does not verify")
    return body


def _event(body: bytes) -> dict:
    """The event a signed body holds; a 400 (`bad-json`, `bad-event`) when it holds none."""
    try:
        event = parsers.loads(body)
    except parsers.UnreadableJson as err:
        raise bad_request("bad-json", f"the delivery's body is not JSON: {err}") from None
    if not isinstance(event, dict):
        raise bad_request("bad-event", "the delivery's body is not an event object")
    if not isinstance(event.get("type"), str) or not event["type"]:
        raise bad_request("bad-event", "the event has no type")
    if not isinstance(event.get("boardId"), str) or not BOARD_ID.fullmatch(event["boardId"]):
        raise bad_request("bad-event", "the event's boardId is not a board id (brd_…)")
    if event["type"] == "card.ready" and not (
        isinstance(event.get("cardId"), str) and CARD_ID.fullmatch(event["cardId"])
    ):
        raise bad_request("bad-event", "a card.ready event names its cardId (card_…)")
    return event


def note_claim(event: dict, now: datetime | None = None) -> bool:
    """Keep who took a card as a `card.claimed` or `card.advanced` says (its card, stage,
    agent and time), for settling a hold whose claim came and went before the board was read
    again; returns whether it was kept. An event short of any of those is not kept: the look
    at its board still happens."""
    if event.get("type") not in CLAIM_EVENTS:
        return False
    data = event.get("data")
    agent_id = data.get("agentId") if isinstance(data, dict) else None
    card_id, stage_key = event.get("cardId"), event.get("stageKey")
    if not all(
        isinstance(v, str) and 0 < len(v) <= 128 and "\x00" not in v for v in (agent_id, card_id, stage_key)
    ):
        return False
    now = now or timezone.now()
    ts = event.get("ts")
    try:
        at = parse_time(ts) if isinstance(ts, str) and len(ts) <= MAX_TS else now
    except (ValueError, OverflowError):  # not a time, or one past the calendar's ends
        at = now
    do_note_relay_claim(event["boardId"], card_id, stage_key, agent_id, event["type"], at, now)
    return True


def unreadable(delivery: str, refusal: ApiError) -> Response:
    """The 400 of a signed delivery whose body holds no event. A relay would deliver it again
    and again, so it is logged, once a delivery: this line, with no traceback, and not
    Django's own line for a 4xx as well."""
    log.warning("relay: delivery %s answered 400, its body holds no event: %s", delivery, refusal.detail)
    response = Response(error_body(refusal.code, str(refusal.detail)), status=400)
    response._has_been_logged = True  # read by django.utils.log.log_response
    return response


def accept(event: dict, delivery: str) -> dict:
    """Hand an event to the workers: place a ready card at once, else look at its board soon
    (a claim's event is kept first, `note_claim`)."""
    board_id = event["boardId"]
    if not Board.objects.filter(board_id=board_id, enabled=True).exists():
        if event["type"] == "card.ready":
            do_note_relay_outcome(delivery, RelayOutcome.IGNORED)
        return {"ok": True, "ignored": True}
    note_claim(event)
    if event["type"] == "card.ready":
        ts = event.get("ts")
        tasks.place_card_task.delay(
            board_id, event["cardId"], ts if isinstance(ts, str) and len(ts) <= MAX_TS else None, delivery
        )
    elif cache.add(f"superdispatch:look:{board_id}", 1, LOOK_DELAY_S):
        tasks.look_at_board_task.apply_async((board_id,), countdown=LOOK_DELAY_S)
    return {"ok": True}


RELAY_ANSWER = inline_serializer(
    "RelayAnswer",
    {
        "ok": serializers.BooleanField(),
        "duplicate": serializers.BooleanField(required=False, help_text="this delivery id was seen before"),
        "ignored": serializers.BooleanField(
            required=False, help_text="the board is not opted in, or disabled"
        ),
    },
)
RELAY_HEADERS = [
    OpenApiParameter(
        "X-Treaty-Timestamp",
        str,
        OpenApiParameter.HEADER,
        required=True,
        description="Unix seconds, within 300 s of now",
    ),
    OpenApiParameter(
        "X-Treaty-Signature",
        str,
        OpenApiParameter.HEADER,
        required=True,
        description="sha256=<hex HMAC-SHA256 of `<timestamp>.<body>`> under the relay's delivery secret",
    ),
    OpenApiParameter(
        "X-Treaty-Delivery",
        str,
        OpenApiParameter.HEADER,
        required=True,
        description="the delivery's id: a redelivery is answered as a duplicate",
    ),
]


class RelayEvents(APIView):
    authentication_classes = []  # the relay signs its deliveries; verified_body checks them
    permission_classes = [AllowAny]
    renderer_classes = [JSONRenderer]  # whatever the relay's Accept says
    content_negotiation_class = FirstRenderer

    @extend_schema(
        summary="The event relay's deliveries (signed; no operator token)",
        auth=[],
        description="SuperPipeline's events, delivered by the event relay and signed with the "
        "shared delivery secret (the X-Treaty headers). A ready card is placed at "
        "once; any other event has its board looked at again. A delivery seen "
        "before is answered 200 and acted on once.",
        parameters=RELAY_HEADERS,
        request=OpenApiTypes.OBJECT,
        responses={
            200: OpenApiResponse(
                RELAY_ANSWER, description="a redelivery, or an event for a board not placed"
            ),
            202: OpenApiResponse(RELAY_ANSWER, description="accepted: the workers act on it"),
            400: error("signed, but no delivery id, or the body is not an event"),
            401: error("the timestamp is missing or stale, or the signature does not verify"),
            413: error("the delivery is larger than 64 KiB"),
            503: error(
                "the store or the task queue cannot be reached: nothing was taken, "
                "deliver again after Retry-After seconds"
            ),
        },
    )
    def post(self, request):
        body = verified_body(request, time.time())
        delivery = request.headers.get("X-Treaty-Delivery", "")
        if not DELIVERY.fullmatch(delivery):
            raise bad_request(
                "bad-delivery", "X-Treaty-Delivery names the delivery: 1 to 200 visible ASCII characters"
            )
        try:
            event = _event(body)
        except ApiError as refusal:
            return unreadable(delivery, refusal)
        # One transaction for the id and the hand-off: a copy racing this one waits on the id
        # and is a duplicate, and a hand-off that fails forgets the id so the relay's retry
        # is accepted: while Redis (the task queue, the cache) cannot be reached, 503.
        try:
            with transaction.atomic():
                ready = event["type"] == "card.ready"
                if not do_note_delivery(
                    delivery,
                    timezone.now(),
                    event["cardId"][:128] if ready else "",
                    event["boardId"][:128] if ready else "",
                ):
                    return Response({"ok": True, "duplicate": True})
                answer = accept(event, delivery)
        except QUEUE_DOWN as err:
            log.warning("relay: the task queue cannot be reached, answered 503: %s", type(err).__name__)
            return unavailable("queue-unavailable", "the task queue cannot be reached; deliver again shortly")
        return Response(answer, status=200 if answer.get("ignored") else 202)
