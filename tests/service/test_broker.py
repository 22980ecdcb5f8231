"""The embedded broker never hands a worker a message that is still being written, and a
worker waiting on it looks for the next message often enough for a relayed card."""

import queue as stdlib_queue
import uuid

import pytest
from kombu import Connection
from kombu.transport.virtual import base as virtual

from superdispatch import broker
from superdispatch.celery import app


@pytest.fixture
def channel(tmp_path):
    folder = tmp_path / "queue"
    folder.mkdir()
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "processed_folder": str(tmp_path),
        "control_folder": str(tmp_path),
    }
    with Connection(
        "filesystem://", transport="superdispatch.broker:Transport", transport_options=options
    ) as conn:
        yield conn.default_channel


def test_a_message_being_written_is_invisible_until_it_is_whole(channel, monkeypatch):
    """Look at the queue mid-write, when kombu's own transport has an empty file in it."""
    probes = []
    encode = broker.str_to_bytes

    def encode_while_a_worker_looks(text):
        try:
            probes.append(channel._get("celery"))
        except stdlib_queue.Empty:
            probes.append("empty")
        return encode(text)

    monkeypatch.setattr(broker, "str_to_bytes", encode_while_a_worker_looks)
    channel._put("celery", {"body": "x" * 10_000})
    assert probes == ["empty"]
    assert channel._get("celery") == {"body": "x" * 10_000}


def test_the_app_uses_the_atomic_transport_without_redis(settings):
    if settings.SUPERDISPATCH.redis_url:
        pytest.skip("Redis is the broker here")
    assert type(app.connection_for_write().transport) is broker.Transport


def test_a_worker_waiting_on_the_embedded_broker_looks_again_after_the_short_poll(settings, monkeypatch):
    """A worker's connection (the app's own, as `celery worker` opens it) finds its queue
    empty, waits, and looks again: the wait is EMBEDDED_BROKER_POLL_S, not kombu's second, so
    a relayed card sent meanwhile is taken at the next look. The wait is recorded, not slept:
    the card is sent during it."""
    if settings.SUPERDISPATCH.redis_url:
        pytest.skip("Redis is the broker here: a worker blocks on it, it does not poll")
    name = f"test-poll-{uuid.uuid4().hex}"  # a queue of this test's own in the shared folder
    waits = []
    with app.connection_for_read() as worker, app.connection_for_write() as web:
        sender = web.SimpleQueue(name)

        def wait(seconds):
            waits.append(seconds)
            sender.put({"card": "card_1"})

        monkeypatch.setattr(virtual, "sleep", wait)
        taken = worker.SimpleQueue(name)
        try:
            message = taken.get(timeout=30)
            message.ack()
        finally:
            taken.close()
            sender.close()
    assert message.payload == {"card": "card_1"}
    assert waits == [settings.EMBEDDED_BROKER_POLL_S]
    assert settings.EMBEDDED_BROKER_POLL_S <= 0.05  # well inside the relay's 100 ms to the hold


@pytest.mark.celery
def test_a_worker_that_loses_redis_holding_a_message_closes_and_the_message_comes_back(settings):
    """What Celery 5.7 does to a worker's connection when the broker goes away: it collects
    the connection (the transport forgets it) and then closes it, with a message reserved and
    not yet acknowledged. kombu's own channel then fails on an AttributeError, the worker's
    "Unrecoverable error"; ours closes, and the message is restored to its queue."""
    if not settings.SUPERDISPATCH.redis_url:
        pytest.skip("needs Redis (REDIS_URL)")
    queue = "superdispatch-test-lost-broker"
    url = settings.SUPERDISPATCH.redis_url
    with Connection(url, transport="superdispatch.broker:RedisTransport") as conn:
        reserved = conn.SimpleQueue(queue)
        reserved.put({"card": "card_1"})
        assert reserved.get(timeout=5).payload == {"card": "card_1"}  # taken, not acknowledged
        conn._do_close_transport()  # what Connection.collect() leaves behind
        conn.close()
    with Connection(url) as conn:
        again = conn.SimpleQueue(queue)
        try:
            assert again.get(timeout=5).payload == {"card": "card_1"}
        finally:
            again.clear()
            again.close()


def test_the_app_uses_the_mended_redis_transport_with_redis(settings):
    if not settings.SUPERDISPATCH.redis_url:
        pytest.skip("no Redis here")
    assert type(app.connection_for_write().transport) is broker.RedisTransport
