"""A refusal anyone can cause is one line without a traceback, at most one a minute of a kind,
and every one is counted: a `Host` not allowed, an admin 403, a flood of either."""

from __future__ import annotations

import io
import logging

import pytest
from django.test import Client

from superdispatch.refusals import QuietRefusals
from superdispatch.settings_test import TEST_OPERATOR_TOKEN
from tests.service.test_metrics import Scrape
from tests.service.test_roles import signed_in

pytestmark = pytest.mark.django_db


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def log():
    """What the service's log handler writes (as configured in LOGGING, its filter included),
    with the filter's clock held still until a test moves it."""
    (handler,) = [h for h in logging.getLogger("django").handlers if h.name == "console"]
    quiet = next((f for f in handler.filters if isinstance(f, QuietRefusals)), None)
    clock, stream = Clock(), io.StringIO()
    if quiet is not None:
        saved = quiet.clock, quiet._last.copy(), quiet._left_out.copy()
        quiet.clock = clock
        quiet._last.clear()
        quiet._left_out.clear()
    old = handler.setStream(stream)
    yield stream, clock
    handler.setStream(old)
    if quiet is not None:
        quiet.clock, quiet._last, quiet._left_out = saved


def _refused(why: str) -> float:
    api = Client(HTTP_AUTHORIZATION=f"Bearer {TEST_OPERATOR_TOKEN}")
    return Scrape(api).value("superdispatch_refused_requests_total", why=why)


def test_a_host_not_allowed_is_one_warning_line_without_a_traceback(client, log):
    stream, _ = log
    before = _refused("disallowed-host")
    response = client.get("/healthz", HTTP_HOST="evil.example")
    assert response.status_code == 400
    lines = stream.getvalue().splitlines()
    assert lines == [lines[0]] and "Traceback" not in stream.getvalue()
    assert (
        " WARNING refused a request for host 'evil.example', not in SUPERDISPATCH_ALLOWED_HOSTS" in lines[0]
    )
    assert _refused("disallowed-host") == before + 1


def test_a_flood_of_bad_hosts_is_one_line_a_minute_and_every_one_counted(client, log):
    stream, clock = log
    before = _refused("disallowed-host")
    for n in range(50):
        client.get("/healthz", HTTP_HOST=f"evil{n}.example")
    assert len(stream.getvalue().splitlines()) == 1
    clock.now += 61
    client.get("/healthz", HTTP_HOST="evil.example\nERROR forged line")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert "'evil.example\\\\nERROR forged line'" in lines[1]  # its newline escaped, one line
    assert "(49 more like it in the last 60 s not logged)" in lines[1]
    assert _refused("disallowed-host") == before + 51


def test_an_admin_403_is_one_line_without_a_traceback(log):
    stream, clock = log
    viewer = signed_in("viewer")
    before = _refused("403")
    for _ in range(3):
        assert viewer.get("/admin/auth/user/add/").status_code == 403
    text = stream.getvalue()
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if "Forbidden" in line]
    assert len(lines) == 1 and "WARNING Forbidden (Permission denied): /admin/auth/user/add/" in lines[0]
    assert _refused("403") == before + 3


def test_other_lines_pass_as_they_were(log):
    stream, _ = log
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("django.request").error(
            "Internal Server Error: /v1/x", exc_info=True, extra={"status_code": 500}
        )
    assert "Traceback" in stream.getvalue() and "ERROR Internal Server Error" in stream.getvalue()
