"""The dataset's stream holds one of the server's threads while it is read, so a process
streams one at a time: a second reader meanwhile is a 503 to retry, every other route answers
as usual, and the place is free again once the stream is read, closed or dropped."""
import gc

import pytest

from tests.support.learning_factories import trainable

pytestmark = [pytest.mark.django_db, pytest.mark.storage]


def test_a_second_stream_while_one_is_read_is_a_503_and_other_routes_answer(api):
    trainable(40)
    first = api.get("/v1/dataset")
    assert first.status_code == 200 and first.streaming
    second = api.get("/v1/dataset?format=json")
    assert second.status_code == 503 and second["Retry-After"]
    assert second.json()["error"]["code"] == "busy"
    assert api.get("/healthz").status_code == 200
    assert api.get("/v1/decisions").status_code == 200
    assert b"".join(first.streaming_content).count(b"\n") > 0  # read to its end
    again = api.get("/v1/dataset")
    assert again.status_code == 200
    again.close()  # closed unread, as a server closes an answer its client left
    assert api.get("/v1/dataset").status_code == 200  # and this one is dropped unread


def test_a_stream_dropped_unread_frees_its_place(api):
    trainable(40)
    dropped = api.get("/v1/dataset")
    assert dropped.status_code == 200
    del dropped
    gc.collect()
    answer = api.get("/v1/dataset")
    assert answer.status_code == 200
    b"".join(answer.streaming_content)
