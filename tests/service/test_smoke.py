"""`manage.py smoke`: the release's checks against the sandbox suite on real ports and the
service on Django's live server, one line each, exit 0 only when all pass."""

import io
import os
import socket
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from common import config
from records.models import Board, Decision, LoopState
from sandbox import SandboxServers, Suite, VirtualClock, system_clock
from sandbox.scenario import parse_scenario
from tests.service.test_config import GOOD, ROOT
from tests.support.stand import BOARD, scenario

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
CHECKS = ["healthz", "accounts-token", "hub", "first-sweep"]


@pytest.fixture
def suite():
    suite = Suite(
        parse_scenario(scenario()),
        clock=VirtualClock(system_clock()),
        relay_secret=settings.SUPERDISPATCH.relay_secret,
    )
    with SandboxServers(suite):
        yield suite


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def swept(seconds_ago: float = 0) -> None:
    LoopState.objects.update_or_create(
        pk="loop", defaults={"last_sweep_at": timezone.now() - timedelta(seconds=seconds_ago)}
    )


def smoke(suite, url: str, **env_changes) -> tuple[int, list[str], str]:
    """Run the command with settings pointing at the suite: (exit status, its lines, stderr)."""
    env = {
        **suite.dispatch_config().as_env(),
        "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": ",".join(settings.SUPERDISPATCH.operator_token_sha256),
        "SUPERDISPATCH_DATA_DIR": settings.SUPERDISPATCH.data_dir,
        **env_changes,
    }
    out, err = io.StringIO(), io.StringIO()
    with override_settings(SUPERDISPATCH=config.load(env)):
        try:
            call_command("smoke", "--url", url, stdout=out, stderr=err)
            status = 0
        except SystemExit as exit_:
            status = exit_.code
    return status, out.getvalue().splitlines(), err.getvalue().strip()


def verdicts(lines: list[str]) -> list[tuple[str, str]]:
    return [tuple(line.split(": ", 2)[:2]) for line in lines if not line.startswith("smoke:")]


def test_every_check_passes_against_a_running_service_and_suite(live_server, suite):
    swept(seconds_ago=5)
    status, lines, err = smoke(suite, live_server.url)
    assert status == 0 and err == ""
    assert verdicts(lines) == [(name, "ok") for name in CHECKS]
    assert lines[0] == f"healthz: ok: {live_server.url}/healthz answered ok"
    assert lines[-1] == "smoke: ok, 4 of 4 checks passed"


def test_it_changes_nothing_here_or_in_the_suite(live_server, suite):
    swept(seconds_ago=5)
    before = suite.pipeline.board(BOARD).placement_window_seconds
    smoke(suite, live_server.url)
    smoke(suite, closed_port_url())
    assert suite.pipeline.board(BOARD).placement_window_seconds == before
    assert not Board.objects.exists() and not Decision.objects.exists()
    assert LoopState.objects.count() == 1


def test_no_sweep_yet_fails_the_last_check_and_names_it(live_server, suite):
    status, lines, err = smoke(suite, live_server.url)
    assert status == 1
    assert verdicts(lines) == [
        ("healthz", "ok"),
        ("accounts-token", "ok"),
        ("hub", "ok"),
        ("first-sweep", "failed"),
    ]
    assert err == "smoke: failed: first-sweep"
    assert not LoopState.objects.exists()  # it looked; it wrote no state row


def test_a_loop_that_stopped_sweeping_fails(live_server, suite):
    swept(seconds_ago=10 * 30)
    status, lines, err = smoke(suite, live_server.url)
    assert status == 1 and err == "smoke: failed: first-sweep"
    assert "long past the next one's time" in lines[3]


def test_a_service_that_is_down_and_a_refused_credential_name_the_first_failure(suite):
    swept()
    status, lines, err = smoke(
        suite, closed_port_url(), ORG_PLANE_SERVICE_CREDENTIAL="svc_99999999999999999999:not-it"
    )
    assert status == 1
    assert verdicts(lines) == [
        ("healthz", "failed"),
        ("accounts-token", "failed"),
        ("hub", "failed"),
        ("first-sweep", "ok"),
    ]
    assert "unreachable (ConnectionError)" in lines[0]
    assert err == "smoke: failed: healthz (first of 3 failed checks)"
    assert "not-it" not in "\n".join(lines) + err  # the credential is never printed


def test_an_unreachable_hub_is_named(live_server, suite):
    swept()
    status, lines, err = smoke(suite, live_server.url, AGENTPOD_URL=closed_port_url())
    assert status == 1 and err == "smoke: failed: hub"
    assert verdicts(lines)[2] == ("hub", "failed") and "unreachable" in lines[2]


def test_from_the_command_line_every_failure_is_a_line_and_the_status_is_1(tmp_path):
    down = closed_port_url()
    env = {
        **_clean_env(),
        **GOOD,
        "SUPERDISPATCH_DATA_DIR": str(tmp_path),
        "SUPERPIPELINE_URL": down,
        "ORG_PLANE_URL": down,
        "AGENTPOD_URL": down,
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "smoke", "--url", down],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert verdicts(result.stdout.splitlines()) == [(name, "failed") for name in CHECKS]
    assert "cannot be read" in result.stdout  # a store never migrated
    # (the clients' own log lines come before it, on stderr too)
    assert result.stderr.splitlines()[-1] == "smoke: failed: healthz (first of 4 failed checks)"


def _clean_env() -> dict:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SUPER", "ORG_", "AGENTPOD", "TREATY", "DJANGO", "DATABASE", "REDIS"))
    }
