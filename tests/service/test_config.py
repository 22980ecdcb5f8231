import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from common import config

ROOT = Path(__file__).resolve().parents[2]
GOOD = {
    "SUPERPIPELINE_URL": "http://127.0.0.1:8787",
    "ORG_PLANE_URL": "http://127.0.0.1:8788",
    "ORG_PLANE_SERVICE_CREDENTIAL": "svc_0123456789abcdef0123:s3cret-value",
    "AGENTPOD_URL": "http://127.0.0.1:3001/",
    "TREATY_RELAY_DELIVERY_SECRET": "relay-secret-for-tests-only",
    "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": hashlib.sha256(b"t").hexdigest(),
    "SUPERDISPATCH_DATA_DIR": "/tmp/sd-config-test",
}


def test_defaults_are_the_documented_ones():
    cfg = config.load(GOOD)
    assert (cfg.sweep_seconds, cfg.reservation_seconds, cfg.runner_up_seconds) == (30, 60, 30)
    assert (cfg.placement_window_seconds, cfg.top_k, cfg.fairness) == (10, 3, "round-robin")
    assert (cfg.candidates, cfg.station_filters, cfg.min_proof, cfg.policy) == (
        "roster",
        True,
        "declared",
        False,
    )
    assert (cfg.https, cfg.backlog_bound, cfg.autopilot) == (False, True, False)
    assert (cfg.history_days, cfg.history_min_sample, cfg.history_half_life_days) == (30, 3, 7)
    assert (cfg.suggest_every_seconds, cfg.suggest_window_hours, cfg.stall_minutes) == (0, 24, 30)
    assert (
        cfg.learned,
        cfg.learned_min_rows,
        cfg.learned_min_shadow,
        cfg.learned_margin_pct,
        cfg.learned_credit,
    ) == ("off", 500, 100, 5, "lower-bound")
    assert config.load({**GOOD, "SUPERDISPATCH_LEARNED_CREDIT": "estimate"}).learned_credit == "estimate"
    assert cfg.port == 8796


def test_audiences_fall_back_to_their_urls_and_urls_lose_trailing_slash():
    cfg = config.load({**GOOD, "SUPERWITNESS_URL": "http://127.0.0.1:4000"})
    assert cfg.agentpod_audience == cfg.agentpod_url == "http://127.0.0.1:3001"
    assert cfg.superwitness_audience == "http://127.0.0.1:4000"


def test_database_defaults_to_sqlite_under_the_data_dir_and_takes_postgres():
    assert config.load(GOOD).database["NAME"] == "/tmp/sd-config-test/superdispatch.sqlite3"
    pg = config.load({**GOOD, "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/test"})
    assert pg.database["ENGINE"] == "django.db.backends.postgresql"


@pytest.mark.parametrize(
    "name,value",
    [
        ("SUPERDISPATCH_TOP_K", "11"),
        ("SUPERDISPATCH_TOP_K", "0"),
        ("SUPERDISPATCH_TOP_K", "3.5"),
        ("SUPERDISPATCH_SWEEP_SECONDS", "4"),
        ("SUPERDISPATCH_FAIRNESS", "random"),
        ("SUPERDISPATCH_LEARNED", "yes"),
        ("SUPERDISPATCH_DATA_DIR", "relative/dir"),
        ("SUPERDISPATCH_LEARNED_CREDIT", "estimated"),
        ("SUPERDISPATCH_LEARNED_CREDIT", "Lower-Bound"),
        ("ORG_PLANE_SERVICE_CREDENTIAL", "svc_short:secret"),
        ("SUPERPIPELINE_URL", "ftp://x"),
        ("SUPERDISPATCH_OPERATOR_TOKEN_SHA256", "ABC"),
        ("DATABASE_URL", "mysql://x/y"),
    ],
)
def test_a_malformed_setting_is_named_with_its_rule_and_never_its_value(name, value):
    with pytest.raises(config.ConfigError) as err:
        config.load({**GOOD, name: value})
    rule = next(r for n, _, r in config.declared() if n == name)
    # The whole message is the name and the rule: there is no room for the value.
    assert str(err.value) == f"{name} must be {rule}"


@pytest.mark.parametrize(
    "credential", ["svc_0123456789ABCDEF0123:s3cret-value", "svc_0123456789abcDEF0123:S3CRET"]
)
def test_the_service_credential_takes_its_hex_in_either_case_and_is_sent_as_given(credential):
    assert (
        config.load({**GOOD, "ORG_PLANE_SERVICE_CREDENTIAL": credential}).org_plane_service_credential
        == credential
    )


@pytest.mark.parametrize(
    "credential",
    [
        "svc_0123456789abcdef012:s",
        "svc_0123456789abcdeg0123:s",
        "SVC_0123456789abcdef0123:s",
        "svc_0123456789abcdef0123:",
    ],
)
def test_the_service_credential_still_refuses_what_is_not_svc_20_hex_and_a_secret(credential):
    with pytest.raises(config.ConfigError):
        config.load({**GOOD, "ORG_PLANE_SERVICE_CREDENTIAL": credential})


def test_every_missing_required_setting_is_named():
    with pytest.raises(config.ConfigError) as err:
        config.load({})
    for name in (
        "SUPERPIPELINE_URL",
        "ORG_PLANE_URL",
        "ORG_PLANE_SERVICE_CREDENTIAL",
        "AGENTPOD_URL",
        "TREATY_RELAY_DELIVERY_SECRET",
        "SUPERDISPATCH_OPERATOR_TOKEN_SHA256",
    ):
        assert f"{name} is required" in str(err.value)


def test_start_line_names_the_widening_settings_as_documented():
    assert config.load(GOOD).start_line == (
        "superdispatch: listening on :8796, sweeping every 30s, candidates roster, "
        "policy off, learned routing off"
    )


def _start(args, env_changes, tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SUPER", "ORG_", "AGENTPOD", "TREATY", "DJANGO"))
    }
    env.update(GOOD, SUPERDISPATCH_DATA_DIR=str(tmp_path))
    env.update(env_changes)
    env = {k: v for k, v in env.items() if v is not None}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "command",
    [
        ["manage.py", "migrate"],
        ["manage.py", "serve"],
        ["-m", "celery", "-A", "superdispatch", "worker"],
        ["-m", "celery", "-A", "superdispatch", "beat"],
    ],
)
def test_start_refuses_a_missing_secret_without_printing_anything_secret(command, tmp_path):
    result = _start(command, {"ORG_PLANE_SERVICE_CREDENTIAL": None}, tmp_path)
    assert result.returncode != 0
    assert "ORG_PLANE_SERVICE_CREDENTIAL is required" in result.stderr


def test_start_refuses_top_k_11_naming_it_and_not_the_value(tmp_path):
    result = _start(["manage.py", "migrate"], {"SUPERDISPATCH_TOP_K": "11"}, tmp_path)
    assert result.returncode != 0
    assert "SUPERDISPATCH_TOP_K must be an integer from 1 to 10" in result.stderr
    assert "11" not in result.stderr.replace("1 to 10", "")
    assert GOOD["ORG_PLANE_SERVICE_CREDENTIAL"] not in result.stderr + result.stdout


def test_a_crossed_bound_names_both_settings_and_prints_neither_value():
    with pytest.raises(config.ConfigError) as err:
        config.load({**GOOD, "SUPERDISPATCH_RUNNER_UP_SECONDS": "17", "SUPERDISPATCH_HOLD_MIN_SECONDS": "23"})
    [problem] = err.value.problems
    assert "SUPERDISPATCH_HOLD_MIN_SECONDS" in problem and "SUPERDISPATCH_RUNNER_UP_SECONDS" in problem
    assert "17" not in problem and "23" not in problem


def test_the_bounds_a_formula_sets_windows_and_holds_within_are_checked_against_their_most():
    cfg = config.load(GOOD)
    assert (cfg.placement_window_min_seconds, cfg.hold_min_seconds) == (0, 10)
    with pytest.raises(config.ConfigError) as err:
        config.load(
            {
                **GOOD,
                "SUPERDISPATCH_PLACEMENT_WINDOW_MIN_SECONDS": "20",
                "SUPERDISPATCH_HOLD_MIN_SECONDS": "40",
            }
        )
    assert err.value.problems == [
        "SUPERDISPATCH_PLACEMENT_WINDOW_MIN_SECONDS must be at most SUPERDISPATCH_PLACEMENT_WINDOW_SECONDS",
        "SUPERDISPATCH_HOLD_MIN_SECONDS must be at most SUPERDISPATCH_RUNNER_UP_SECONDS",
    ]
    with pytest.raises(config.ConfigError) as err:
        config.load({**GOOD, "SUPERDISPATCH_HOLD_MIN_SECONDS": "4"})
    assert err.value.problems == ["SUPERDISPATCH_HOLD_MIN_SECONDS must be an integer from 5 to 300"]
