"""The edge over the real server: `manage.py serve` (gunicorn) on a fresh store, asked over
HTTP what no test client can send as a server receives it: a request line or a header over
gunicorn's limits, a malformed request, chunked bodies, a body over the limit, and each of the
probes that once answered 500. Every answer is a 4xx in the API's error shape, or the bare 401.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.service.test_config import GOOD, ROOT
from tests.service.test_newer_database import _env

pytestmark = pytest.mark.slow

TOKEN = {"Authorization": "Bearer t"}  # GOOD's digest is sha256("t")
BODY_LIMIT = 256 * 1024


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """host:port of SuperDispatch served as in production, on a store of its own."""
    data_dir = tmp_path_factory.mktemp("served")
    env = _env(data_dir)
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stderr
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve"], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True
    )
    log = ServerLog()
    threading.Thread(target=log.read, args=(server.stderr,), daemon=True).start()
    try:
        assert log.wait_for("superdispatch: listening"), "".join(log.lines)
        yield f"127.0.0.1:{env['PORT']}", log
    finally:
        server.terminate()
        server.wait(30)


class ServerLog:
    """The server's stderr, line by line, as it writes them."""

    def __init__(self):
        self.lines: list[str] = []
        self.grew = threading.Condition()

    def read(self, stream) -> None:
        for line in stream:
            with self.grew:
                self.lines.append(line)
                self.grew.notify_all()

    def wait_for(self, text: str, timeout: float = 60) -> bool:
        with self.grew:
            return self.grew.wait_for(lambda: any(text in line for line in self.lines), timeout)


def ask(served, method: str, path: str, body=None, headers=None, chunked: bool = False):
    """(status, headers, body) of one request over a connection of its own."""
    address, _ = served
    connection = http.client.HTTPConnection(address, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def raw(served, request: bytes) -> tuple[int, dict, bytes]:
    """The answer to bytes sent as they are, read to the end (gunicorn closes after it)."""
    host, port = served[0].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    return int(status_line.split()[1]), headers, body


def assert_error(answer, status: int, code: str | None = None) -> dict:
    got, headers, body = answer
    assert got == status, body[:300]
    assert headers["Content-Type"].startswith("application/json"), body[:300]
    error = json.loads(body)["error"]
    assert set(error) == {"code", "message"} and error["message"]
    if code:
        assert error["code"] == code, error
    return error


# --- gunicorn's own refusals --------------------------------------------------------------


def test_a_request_line_over_the_servers_limit_is_a_414_in_the_error_shape(served):
    answer = ask(served, "GET", "/v1/decisions?board=brd_" + "a" * 5000, headers=TOKEN)
    assert "4094" in assert_error(answer, 414, "request-line-too-long")["message"]


def test_a_header_over_the_servers_limit_is_a_431_in_the_error_shape(served):
    answer = ask(served, "GET", "/v1/boards", headers={**TOKEN, "X-Padding": "p" * 9000})
    assert_error(answer, 431, "headers-too-large")


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /v1/boards HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n",
        b"BREW\x00 /v1/boards HTTP/1.1\r\n\r\n",
        b"GET /v1/boards HTTP/9.9\r\n\r\n",
        b"POST /v1/models/train HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
def test_a_malformed_request_is_refused_in_the_error_shape(served, request_bytes):
    status, headers, body = raw(served, request_bytes)
    assert 400 <= status < 500 or status == 501, body
    assert headers["Content-Type"] == "application/json"
    assert set(json.loads(body)["error"]) == {"code", "message"}


def test_the_admins_sign_in_page_is_served_with_its_cookie(served):
    status, headers, body = ask(served, "GET", "/admin/login/")
    assert status == 200, body[:300]
    assert headers["Set-Cookie"].startswith("csrftoken=")


# --- Bodies ---------------------------------------------------------------------------------


def test_a_chunked_body_is_read_not_ignored(served):
    answer = ask(
        served, "PUT", "/v1/boards/brd_chunky", body=iter([b'{"x":', b" 1}"]), headers=TOKEN, chunked=True
    )
    assert_error(answer, 400, "unexpected-body")
    assert ask(served, "GET", "/v1/boards/brd_chunky", headers=TOKEN)[0] == 404
    answer = ask(
        served, "POST", "/v1/models/train", body=iter([b'{"seed": "1"}']), headers=TOKEN, chunked=True
    )
    assert assert_error(answer, 400, "bad-field")["message"].startswith("seed must be")
    assert ask(served, "PUT", "/v1/boards/brd_chunky", body=iter([]), headers=TOKEN, chunked=True)[0] == 200


def test_a_chunked_body_over_the_limit_is_a_413(served):
    pieces = iter([b"x" * 65536] * 5)
    answer = ask(served, "POST", "/v1/models/train", body=pieces, headers=TOKEN, chunked=True)
    assert str(BODY_LIMIT) in assert_error(answer, 413, "too-large")["message"]


def test_a_body_over_the_limit_is_a_413_read_to_its_end(served):
    body = json.dumps({"pad": "x" * BODY_LIMIT}).encode()
    for _ in range(3):  # and the connection answers every time, none of them dropped
        answer = ask(
            served,
            "POST",
            "/v1/models/train",
            body=body,
            headers={**TOKEN, "Content-Type": "application/json"},
        )
        assert str(BODY_LIMIT) in assert_error(answer, 413, "too-large")["message"]


# --- The probes that answered 500 -----------------------------------------------------------


def _signed(body: bytes, ts: str | None = None) -> dict:
    ts = ts or str(int(time.time()))
    mac = hmac.new(
        GOOD["TREATY_RELAY_DELIVERY_SECRET"].encode(), ts.encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    return {
        "X-Treaty-Timestamp": ts,
        "X-Treaty-Signature": f"sha256={mac}",
        "X-Treaty-Delivery": "dlv_probe",
        "Content-Type": "application/json",
    }


DEEP = b"[" * 10_000 + b"]" * 10_000
PROBES = {
    "timestamp of 400 digits": (
        "POST",
        "/v1/relay/events",
        b"{}",
        {"X-Treaty-Timestamp": "9" * 400, "X-Treaty-Signature": "x"},
        401,
    ),
    "timestamp ²": (
        "POST",
        "/v1/relay/events",
        b"{}",
        {"X-Treaty-Timestamp": "\xb2", "X-Treaty-Signature": "x"},
        401,
    ),
    "before out of range": ("GET", "/v1/decisions?before=9999-12-31T23:59:59-14:00", None, TOKEN, 400),
    "since out of range": ("GET", "/v1/dataset?since=0001-01-01T00:00:00%2B14:00", None, TOKEN, 400),
    "training since out of range": (
        "POST",
        "/v1/models/train",
        b'{"since":"9999-12-31T23:59:59-14:00"}',
        {**TOKEN, "Content-Type": "application/x-www-form-urlencoded"},
        400,
    ),
    "deep JSON, as a form": (
        "POST",
        "/v1/models/train",
        DEEP,
        {**TOKEN, "Content-Type": "application/x-www-form-urlencoded"},
        400,
    ),
    "deep JSON": ("POST", "/v1/models/train", DEEP, {**TOKEN, "Content-Type": "application/json"}, 400),
    # Signed when it is sent, not when the tests are collected: a suite that runs for more than
    # the relay's five minutes of skew would otherwise send a stale timestamp.
    "deep JSON, signed": ("POST", "/v1/relay/events", DEEP, lambda: _signed(DEEP), 400),
    "a 405 on the schema": ("POST", "/v1/schema", None, TOKEN, 405),
}


@pytest.mark.parametrize("probe", PROBES, ids=list(PROBES))
def test_each_probe_that_once_answered_500_is_a_4xx_in_the_error_shape(served, probe):
    method, path, body, headers, status = PROBES[probe]
    headers = headers() if callable(headers) else headers
    assert_error(ask(served, method, path, body=body, headers=headers), status)


def test_the_probes_left_no_error_in_the_servers_log(served):
    for method, path, body, headers, _ in PROBES.values():
        ask(served, method, path, body=body, headers=headers() if callable(headers) else headers)
    # A line written after theirs: each probe's lines were written before its answer. The
    # relay's line for a signed body that holds no event, for Django's 4xx lines are at most
    # one a minute of a kind in each worker (superdispatch.refusals).
    marker = {**_signed(b"[["), "X-Treaty-Delivery": "dlv_after_the_probes"}
    ask(served, "POST", "/v1/relay/events", body=b"[[", headers=marker)
    log = served[1]
    assert log.wait_for("dlv_after_the_probes"), "".join(log.lines)
    assert not [line for line in log.lines if "ERROR" in line or "Traceback" in line]


# --- Slow clients ---------------------------------------------------------------------------

SLOW_STARTS = {
    "a header line never finished": b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
    "a body short of its length": (
        b'POST /v1/relay/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{"type": '
    ),
}


@pytest.mark.parametrize("start", SLOW_STARTS, ids=list(SLOW_STARTS))
def test_sixteen_slow_clients_holding_their_connections_leave_healthz_answering(served, start):
    # Twice the threads `manage.py serve` runs (2 workers x 4): each slow client costs a socket.
    host, port = served[0].split(":")
    held = []
    try:
        for _ in range(16):
            sock = socket.create_connection((host, int(port)), timeout=30)
            sock.sendall(SLOW_STARTS[start])
            held.append(sock)
        status, _, body = ask(served, "GET", "/healthz")  # its socket gives up after 30 s
        assert status == 200, body
    finally:
        for sock in held:
            sock.close()


def test_a_head_that_grows_past_the_servers_buffer_is_a_431_in_the_error_shape(served):
    # Sent in pieces, as a slow client would: the head is refused once it outgrows the buffer,
    # not kept in memory to its end.
    host, port = served[0].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"GET /v1/boards HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        try:
            for n in range(20):
                sock.sendall(f"X-Pad-{n}: {'p' * 8000}\r\n".encode())
        except OSError:  # closed once refused: the answer is already on its way
            pass
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431 "), answer[:300]
    assert json.loads(body)["error"]["code"] == "headers-too-large"
