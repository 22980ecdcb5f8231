"""gunicorn's `timeout` under superdispatch.gunicorn_worker: the loop's heartbeat cannot stop a
request, so the front answers one past its budget 503 and the worker that ran it retires, and
gunicorn starts a fresh one whose threads are all free."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading

import pytest

from tests.service.test_config import ROOT
from tests.service.test_newer_database import _free_port
from tests.service.test_served import ServerLog

pytestmark = pytest.mark.slow


def get(port: str, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_a_request_past_gunicorns_timeout_is_a_503_and_its_worker_is_replaced():
    port = _free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "superdispatch.settings_test"}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--worker-class",
            "superdispatch.gunicorn_worker.Worker",
            "--workers",
            "1",
            "--threads",
            "2",
            "--timeout",
            "2",
            "--graceful-timeout",
            "1",
            "--bind",
            f"127.0.0.1:{port}",
            "tests.support.stuck_wsgi:application",
        ],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = ServerLog()
    threading.Thread(target=log.read, args=(server.stderr,), daemon=True).start()
    try:
        assert log.wait_for("Started server process"), "".join(log.lines)
        first_pid = get(port, "/")[1]
        status, body = get(port, "/stuck")
        assert status == 503
        assert json.loads(body)["error"]["code"] == "over-budget"
        assert log.wait_for("retires after a request over budget"), "".join(log.lines)
        with log.grew:  # gunicorn's fresh worker, started once the retired one has exited
            assert log.grew.wait_for(
                lambda: sum("Started server process" in line for line in log.lines) == 2, 60
            )
        assert get(port, "/")[1] != first_pid
    finally:
        server.terminate()
        server.wait(30)
