"""The asyncio front (superdispatch.front) driven as uvicorn drives it, without a socket: a
request is read whole on the loop before a thread runs the application, its head and body
are held to the server's limits, and a request past its budget is answered and reported."""

from __future__ import annotations

import asyncio
import json
import threading

from superdispatch.front import HIGH_WATER, Front, Limits, environ_for

WAIT_S = 10  # a generous bound on a thread's reply; no test waits it unless it fails


def scope(method="GET", path=b"/healthz", query=b"", headers=()):
    return {
        "type": "http",
        "method": method,
        "raw_path": path,
        "path": path.decode(),
        "query_string": query,
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 8796),
        "client": ("127.0.0.1", 50000),
        "headers": [(name.lower(), value) for name, value in headers],
    }


class Client:
    """One request's side of the ASGI conversation: the body in the pieces given (the last
    one only once `release` is set, if given), then, as uvicorn does, a disconnect once the
    answer is complete or `leave` is set."""

    def __init__(self, pieces=(b"",), release: asyncio.Event | None = None):
        self.pieces = list(pieces)
        self.release = release
        self.sent: list[dict] = []
        self.complete = asyncio.Event()
        self.leave = asyncio.Event()

    async def receive(self):
        if self.pieces:
            if len(self.pieces) == 1 and self.release is not None:
                await self.release.wait()
            piece = self.pieces.pop(0)
            return {"type": "http.request", "body": piece, "more_body": bool(self.pieces)}
        waits = [asyncio.ensure_future(self.complete.wait()), asyncio.ensure_future(self.leave.wait())]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for wait in waits:
            wait.cancel()
        return {"type": "http.disconnect"}

    async def send(self, message):
        self.sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            self.complete.set()

    @property
    def status(self) -> int:
        return self.sent[0]["status"]

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent[1:])

    def error(self) -> dict:
        headers = {k.lower(): v for k, v in self.sent[0]["headers"]}
        assert headers[b"content-type"] == b"application/json"
        return json.loads(self.body)["error"]


def echo(environ, start_response):
    """The body it was given, with what it was told of it in headers."""
    body = environ["wsgi.input"].read()
    start_response(
        "200 OK",
        [
            ("Content-Type", "text/plain"),
            ("X-Length", environ.get("CONTENT_LENGTH", "")),
            ("X-Terminated", str(environ["wsgi.input_terminated"])),
        ],
    )
    return [body]


def run(front, client, request_scope=None):
    asyncio.run(front(request_scope or scope(), client.receive, client.send))
    return client


def test_a_request_whose_body_has_not_come_holds_no_thread():
    front = Front(echo, threads=1)  # one thread: a slow client holding it would stall the rest

    async def both():
        release = asyncio.Event()
        slow = Client([b'{"half": ', b"1}"], release=release)
        quick = Client()
        held = asyncio.ensure_future(front(scope("POST", b"/v1/boards"), slow.receive, slow.send))
        await front(scope(), quick.receive, quick.send)  # answered while the slow one waits
        assert quick.status == 200 and not slow.sent
        release.set()
        await held
        return slow

    slow = asyncio.run(both())
    assert slow.status == 200 and slow.body == b'{"half": 1}'


def test_a_body_in_pieces_reaches_the_application_whole():
    client = run(
        Front(echo), Client([b"ab", b"cd", b"ef"]), scope("POST", headers=[(b"content-length", b"6")])
    )
    assert (client.status, client.body) == (200, b"abcdef")


def test_a_chunked_body_over_the_limit_reaches_the_application_one_byte_past_it():
    front = Front(echo, limits=Limits(body=10))
    client = run(
        front,
        Client([b"x" * 6, b"x" * 6, b"x" * 6]),
        scope("POST", headers=[(b"transfer-encoding", b"chunked")]),
    )
    headers = {k.lower(): v for k, v in client.sent[0]["headers"]}
    assert client.body == b"x" * 11 and headers[b"x-terminated"] == b"True"
    assert headers[b"x-length"] == b""  # so common.edge reads it, and refuses it, as chunked


def test_a_content_length_over_the_limit_is_left_unread_for_the_application_to_refuse():
    front = Front(echo, limits=Limits(body=10))
    client = run(front, Client([b"x" * 11]), scope("POST", headers=[(b"content-length", b"11")]))
    assert client.body == b"" and dict(client.sent[0]["headers"])[b"X-Length"] == b"11"


def test_a_request_line_over_the_limit_is_a_414_in_the_error_shape():
    client = run(Front(echo), Client(), scope(path=b"/v1/boards", query=b"q=" + b"a" * 5000))
    assert client.status == 414
    error = client.error()
    assert error["code"] == "request-line-too-long" and "4094" in error["message"]


def test_a_header_or_too_many_headers_over_the_limit_is_a_431_in_the_error_shape():
    long_header = run(Front(echo), Client(), scope(headers=[(b"x-padding", b"p" * 9000)]))
    many = run(Front(echo), Client(), scope(headers=[(b"x-%d" % n, b"1") for n in range(101)]))
    for client in (long_header, many):
        assert client.status == 431 and client.error()["code"] == "headers-too-large"


def test_a_body_that_does_not_come_whole_in_time_is_a_408_and_runs_nothing():
    called = []
    front = Front(lambda environ, start: called.append(1) or [], body_timeout_s=0)
    client = run(
        front,
        Client([b"half", b"never"], release=asyncio.Event()),
        scope("POST", headers=[(b"content-length", b"9")]),
    )
    assert client.status == 408 and client.error()["code"] == "request-timeout"
    assert not called


def test_a_request_past_its_budget_is_a_503_its_worker_told_and_its_thread_let_go():
    entered, release = threading.Event(), threading.Event()
    finished = threading.Event()

    def stuck(environ, start_response):
        entered.set()
        release.wait(WAIT_S)
        start_response("200 OK", [])
        finished.set()
        return [b"late"]

    async def budget_passes(awaitable, timeout):
        # The budget's clock, the test's: it has run out once the thread is in the request.
        awaitable.close()
        await asyncio.get_running_loop().run_in_executor(None, entered.wait, WAIT_S)
        raise TimeoutError

    overruns = []
    front = Front(stuck, budget_s=60, on_overrun=overruns.append, wait_for=budget_passes)
    client = run(front, Client(), scope(path=b"/v1/what-if"))
    assert client.status == 503
    error = client.error()
    assert error["code"] == "over-budget" and "60 s budget" in error["message"]
    assert [s["raw_path"] for s in overruns] == [b"/v1/what-if"]
    release.set()  # the thread, let go, finishes; its late answer is sent to nobody
    assert finished.wait(WAIT_S)


def test_a_request_that_waited_past_its_budget_for_a_thread_is_a_503_and_never_runs():
    called = []

    async def budget_passes(awaitable, timeout):
        awaitable.close()
        raise TimeoutError

    busy = threading.Event()
    front = Front(
        lambda environ, start: called.append(1) or [],
        threads=1,
        on_overrun=lambda s: called.append("overrun"),
        wait_for=budget_passes,
    )
    front.pool.submit(lambda: busy.wait(WAIT_S))  # the one thread is busy
    client = run(front, Client())
    busy.set()
    assert client.status == 503 and "too busy" in client.error()["message"]
    done = threading.Event()
    front.pool.submit(done.set)  # runs after the refused request's turn
    assert done.wait(WAIT_S) and called == []


def test_a_client_gone_stops_a_streaming_answer():
    closed = threading.Event()

    def endless(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/x-ndjson")])

        def rows():
            try:
                while True:
                    yield b"x" * 1024
            finally:
                closed.set()

        return rows()

    async def leave_midway():
        client = Client()
        original_send = client.send

        async def send(message):
            await original_send(message)
            if len(client.sent) == 3:
                client.leave.set()  # the reader goes after two pieces

        await Front(endless)(scope(path=b"/v1/dataset"), client.receive, send)
        return client

    client = asyncio.run(leave_midway())
    assert closed.wait(WAIT_S)
    assert client.status == 200
    assert 0 < len(client.body) <= 3 * HIGH_WATER  # what was made before the reader went


def test_an_application_that_fails_is_a_500_in_the_error_shape():
    def failing(environ, start_response):
        raise RuntimeError("a secret-bearing detail")

    client = run(Front(failing), Client())
    assert client.status == 500
    error = client.error()
    assert error["code"] == "internal" and "secret" not in error["message"]


def test_the_environ_is_gunicorns():
    environ = environ_for(
        scope(
            "POST",
            path=b"/v1/boards/brd_%C3%A9",
            query=b"a=1",
            headers=[
                (b"content-type", b"application/json"),
                (b"x-forwarded-proto", b"https"),
                (b"x_forwarded_proto", b"http"),
                (b"accept", b"a"),
                (b"accept", b"b"),
            ],
        ),
        b"{}",
    )
    assert environ["PATH_INFO"] == "/v1/boards/brd_\xc3\xa9"  # UTF-8 bytes read as latin-1
    assert environ["QUERY_STRING"] == "a=1" and environ["CONTENT_TYPE"] == "application/json"
    assert environ["HTTP_X_FORWARDED_PROTO"] == "https"  # the underscored one dropped
    assert environ["HTTP_ACCEPT"] == "a,b"
    assert environ["REMOTE_ADDR"] == "127.0.0.1" and environ["wsgi.input"].read() == b"{}"


def test_an_http_version_other_than_1_0_or_1_1_is_a_400_in_the_error_shape():
    client = run(Front(echo), Client(), {**scope(), "http_version": "9.9"})
    assert client.status == 400 and "HTTP/9.9" in client.error()["message"]


def test_a_header_value_with_a_leading_space_is_sent_without_it():
    def cookie(environ, start_response):  # as Django's WSGI handler writes a Set-Cookie
        start_response("200 OK", [("Set-Cookie", " csrftoken=abc; Path=/")])
        return [b""]

    client = run(Front(cookie), Client())
    assert (b"Set-Cookie", b"csrftoken=abc; Path=/") in client.sent[0]["headers"]


def test_healthz_is_answered_while_every_thread_of_the_pool_is_busy():
    release = threading.Event()

    def app(environ, start_response):
        if environ["PATH_INFO"] != "/healthz":
            release.wait(WAIT_S)
        start_response("200 OK", [])
        return [environ["PATH_INFO"].encode()]

    front = Front(app, threads=1)
    front.pool.submit(lambda: release.wait(WAIT_S))  # the pool's one thread is busy
    try:
        client = run(front, Client())  # /healthz
        assert (client.status, client.body) == (200, b"/healthz")
    finally:
        release.set()


def test_a_write_is_answered_while_every_read_thread_is_busy():
    release = threading.Event()
    ran_on = []

    def app(environ, start_response):
        ran_on.append(threading.current_thread().name)
        start_response("202 Accepted", [])
        return [environ["REQUEST_METHOD"].encode()]

    front = Front(app, threads=1, write_threads=1)
    front.pool.submit(lambda: release.wait(WAIT_S))  # the reads' one thread is busy
    try:
        client = run(front, Client(), scope("POST", b"/v1/relay/events"))
        assert (client.status, client.body) == (202, b"POST")
        for method in ("PUT", "DELETE"):
            assert run(front, Client(), scope(method, b"/v1/boards/brd_1")).status == 202
    finally:
        release.set()
    # ... and a read still waits for the reads' threads, never taking a write's.
    assert run(front, Client(), scope("GET", b"/v1/decisions")).body == b"GET"
    assert set(ran_on[:3]) == {"front-write-0"} and ran_on[3] == "front-read-0"
