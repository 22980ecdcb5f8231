"""The dataset's stream holds one of the server's threads while it is read, so a process
streams one at a time: a second reader meanwhile is a 503 to retry, every other route answers
as usual, and the place is free again once the stream is read, closed or dropped."""

import gc
import threading

import pytest
from django.db import connections
from django.test import Client

from learning import api as learning_api
from superdispatch.settings_test import TEST_OPERATOR_TOKEN
from tests.support.learning_factories import trainable

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def test_a_second_stream_while_one_is_read_is_a_503_and_other_routes_answer(api):
    trainable(40)
    first = api.get("/v1/dataset")
    assert first.status_code == 200 and first.streaming
    rows = next(iter(first.streaming_content))  # its first piece read: the stream is under way
    others: dict = {}

    def meanwhile():  # other readers, each on a thread (and a connection) of its own
        try:
            client = Client(HTTP_AUTHORIZATION=f"Bearer {TEST_OPERATOR_TOKEN}")
            others.update(
                {path: client.get(path) for path in ("/v1/dataset?format=json", "/healthz", "/v1/boards")}
            )
        finally:
            connections.close_all()

    thread = threading.Thread(target=meanwhile)
    thread.start()
    thread.join()
    second = others["/v1/dataset?format=json"]
    assert second.status_code == 503 and second["Retry-After"]
    assert second.json()["error"]["code"] == "busy"
    assert others["/healthz"].status_code == 200 and others["/v1/boards"].status_code == 200
    assert (rows + b"".join(first.streaming_content)).count(b"\n") > 0  # read to its end
    again = api.get("/v1/dataset")
    assert again.status_code == 200
    b"".join(again.streaming_content)


def test_a_stream_closed_unread_frees_its_place():
    # As a server closes an answer whose client went away; on the stream itself, for the test
    # client's close() would also end the test's request and its connection.
    assert learning_api._streams.acquire(blocking=False)
    stream = learning_api._Stream(iter([b"row\n"]))
    stream.close()
    stream.close()  # once only
    assert learning_api._streams.acquire(blocking=False)
    learning_api._streams.release()


def test_a_stream_dropped_unread_frees_its_place(api):
    trainable(40)
    dropped = api.get("/v1/dataset")
    assert dropped.status_code == 200
    del dropped
    gc.collect()
    answer = api.get("/v1/dataset")
    assert answer.status_code == 200
    b"".join(answer.streaming_content)
