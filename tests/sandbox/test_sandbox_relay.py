"""The relay signs each delivery as contracts.md says, and retries what was not taken."""

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _verifies(secret: str, headers: dict, body: bytes) -> bool:
    expected = hmac.new(
        secret.encode(), f"{headers['X-Treaty-Timestamp']}.".encode() + body, hashlib.sha256
    ).hexdigest()
    return hmac.compare_digest(headers["X-Treaty-Signature"], f"sha256={expected}")


def test_each_delivery_is_signed_over_timestamp_and_raw_body(world):
    received = []
    world.suite.relay.target = lambda headers, body: received.append((headers, body))
    card = world.card()
    world.suite.relay.flush()
    [(headers, body)] = received
    assert _verifies(world.suite.relay.secret, headers, body)
    assert not _verifies("another-secret", headers, body)
    assert headers["X-Treaty-Timestamp"] == str(int(world.clock().timestamp()))
    assert headers["X-Treaty-Delivery"].startswith("dlv_")
    assert json.loads(body)["cardId"] == card.id


def test_delivery_ids_are_unique(world):
    received = []
    world.suite.relay.target = lambda headers, body: received.append(headers["X-Treaty-Delivery"])
    for _ in range(3):
        world.card()
    world.suite.relay.flush()
    assert len(set(received)) == 3


def test_a_refused_delivery_is_retried_under_the_same_id_up_to_three_times(world):
    answers = iter([500, 503, 200])
    seen = []

    def target(headers, body):
        seen.append(headers["X-Treaty-Delivery"])
        return next(answers)

    world.suite.relay.target = target
    world.card()
    for _ in range(4):
        world.clock.advance(1)
        world.suite.relay.flush()
    assert len(seen) == 3 and len(set(seen)) == 1
    [delivery] = world.suite.relay.deliveries
    assert delivery.statuses == [500, 503, 200] and delivery.delivered


def test_without_a_target_events_are_recorded_but_not_sent(world):
    world.card()
    assert world.suite.relay.flush() == []
    assert [d.event["type"] for d in world.suite.relay.deliveries] == ["card.ready"]


def test_an_http_target_receives_the_signed_post(world):
    received = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, dict(self.headers), body))
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        world.suite.relay.target = f"http://127.0.0.1:{server.server_address[1]}/v1/relay/events"
        world.card()
        [delivery] = world.suite.relay.flush()
    finally:
        server.shutdown()
        server.server_close()
    [(path, headers, body)] = received
    assert path == "/v1/relay/events" and delivery.statuses == [202]
    assert _verifies(world.suite.relay.secret, headers, body)


def test_an_unreachable_http_target_is_recorded_as_unreachable(world):
    world.suite.relay.target = "http://127.0.0.1:9/v1/relay/events"
    world.card()
    [delivery] = world.suite.relay.flush()
    assert delivery.statuses == [None] and not delivery.delivered
