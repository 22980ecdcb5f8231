"""The served schema as two outside linters read it: Redocly (`recommended`) and Spectral
(`spectral:oas`), each at a pinned version from the npm registry through `npx`. Each must find
nothing at all, warnings included.

Where `npx` is missing the test is skipped and says so; under CI (`CI=true`, as .ci/run sets
it) a missing `npx` fails instead, so the lint cannot quietly stop running.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REDOCLY = "@redocly/cli@2.77.0"
SPECTRAL = "@stoplight/spectral-cli@6.16.3"

pytestmark = pytest.mark.django_db


@pytest.fixture
def npx() -> str:
    found = shutil.which("npx")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the schema lint needs npx (Node.js) under CI")
        pytest.skip("schema lint skipped: no npx on PATH (install Node.js and npm)")
    return found


@pytest.fixture
def served_schema(api, tmp_path) -> Path:
    response = api.get("/v1/schema?format=json")
    assert response.status_code == 200
    path = tmp_path / "openapi.json"
    path.write_bytes(response.content)
    return path


def _run(command: list[str]) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "REDOCLY_TELEMETRY": "off",
        "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true",
    }
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)


def test_redocly_finds_no_error_and_no_warning(npx, served_schema):
    run = _run(
        [
            npx,
            "--yes",
            REDOCLY,
            "lint",
            "--config",
            str(HERE / "redocly.yaml"),
            "--format",
            "stylish",
            "--max-problems",
            "1000",
            str(served_schema),
        ]
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report
    assert "Your API description is valid" in report and "You have" not in report, report


def test_spectral_finds_nothing(npx, served_schema):
    run = _run(
        [
            npx,
            "--yes",
            SPECTRAL,
            "lint",
            "--ruleset",
            str(HERE / "spectral.yaml"),
            "--fail-severity",
            "hint",
            str(served_schema),
        ]
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report
    assert "No results with a severity of 'hint' or higher found!" in report, report
