"""The sandbox's receiver for SuperDispatch's events and chat posts, and how `manage.py
sandbox --receiver` finds where to serve it."""

from __future__ import annotations

import hashlib
import hmac
import json
from types import SimpleNamespace

import pytest
import requests
from django.core.management.base import CommandError

from sandbox import Receiver, ReceiverServer, Suite
from sandbox.management.commands.sandbox import env_lines, receiver_address

SECRET = "receiver-secret-0123456789"


def signed(body: bytes, ts: int, secret: str = SECRET, delivery: str = "evt_1") -> dict:
    mac = hmac.new(secret.encode(), f"{ts}.".encode() + body, hashlib.sha256).hexdigest()
    return {
        "x-superdispatch-delivery": delivery,
        "x-superdispatch-timestamp": str(ts),
        "x-superdispatch-signature": f"sha256={mac}",
    }


def test_it_records_a_signed_event_once_and_refuses_a_bad_or_stale_one():
    receiver = Receiver(SECRET, clock=lambda: 1000)
    body = json.dumps({"id": "evt_1", "type": "decision.recorded"}).encode()
    assert receiver.handle("/events", signed(body, 1000), body) == 202
    assert receiver.handle("/events", signed(body, 1000), body) == 200  # a redelivery
    assert receiver.handle("/events", signed(body, 1000, secret="x" * 20), body) == 401
    assert receiver.handle("/events", signed(body, 1000 - 301), body) == 401
    assert [e["id"] for e in receiver.received.events] == ["evt_1"]
    assert receiver.received.deliveries == {"evt_1": 2} and receiver.received.refused == 2
    assert receiver.summary() == "1 events (1 decision.recorded), 0 chat posts"


def test_it_takes_a_chat_post_as_text_and_answers_as_a_failing_receiver_when_told():
    posts = []
    receiver = Receiver(SECRET, on_chat=posts.append)
    assert receiver.handle("/chat", {}, b'{"text": "hello"}') == 200
    assert receiver.handle("/chat", {}, b'{"blocks": []}') == 400
    receiver.status = 500
    assert receiver.handle("/chat", {}, b'{"text": "again"}') == 500
    assert posts == ["hello"] and receiver.received.requests == 3


def test_it_serves_over_http():
    with ReceiverServer(Receiver(SECRET)) as server:
        answer = requests.post(server.url + "/chat", json={"text": "hi"}, timeout=5)
        assert answer.status_code == 200 and server.receiver.received.chat == ["hi"]


def config(**urls):
    return SimpleNamespace(events_url=urls.get("events", ""), chat_webhook_url=urls.get("chat", ""))


def test_the_command_serves_the_receiver_where_the_settings_point():
    cfg = config(events="http://127.0.0.1:8791/events", chat="http://127.0.0.1:8791/chat")
    assert receiver_address(cfg, None) == (8791, "/events", "/chat")
    assert receiver_address(config(), 9000) == (9004, "/events", "/chat")
    for bad in (
        config(),
        config(events="https://hooks.example/events"),
        config(events="http://127.0.0.1:8791/events", chat="http://127.0.0.1:8792/chat"),
    ):
        with pytest.raises(CommandError):
            receiver_address(bad, None)


def test_write_env_points_superdispatch_at_the_receiver_too():
    server = ReceiverServer(Receiver(SECRET))
    try:
        lines = env_lines(Suite.from_scenario("demo"), server)
    finally:
        server.close()
    assert f"SUPERDISPATCH_EVENTS_URL={server.url}/events\n" in lines
    assert f"SUPERDISPATCH_EVENTS_SECRET={SECRET}\n" in lines
    assert f"SUPERDISPATCH_CHAT_WEBHOOK_URL={server.url}/chat\n" in lines
