"""A real deployment: HTTPS behind a proxy, a throttled admin sign-in, operator token rotation."""

import hashlib
import hmac
import os
import subprocess
import sys
from dataclasses import replace

import pytest
from django.conf import settings
from django.test import Client, override_settings

from common import auth, config
from tests.service.test_config import GOOD, ROOT

SECURITY_WARNINGS = ("security.W004", "security.W008", "security.W012", "security.W016")


def _manage(args, tmp_path, **env_changes):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SUPER", "ORG_", "AGENTPOD", "TREATY", "DJANGO"))
    }
    env.update(GOOD, SUPERDISPATCH_DATA_DIR=str(tmp_path), **env_changes)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_with_https_on_reports_nothing(tmp_path):
    result = _manage(["check", "--deploy", "--fail-level", "WARNING"], tmp_path, SUPERDISPATCH_HTTPS="on")
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNINGS" not in result.stderr


def test_check_deploy_without_https_names_only_what_https_on_sets(tmp_path):
    result = _manage(["check", "--deploy"], tmp_path)
    named = [w for w in SECURITY_WARNINGS if w in result.stderr]
    assert named == list(SECURITY_WARNINGS)
    assert "drf_spectacular" not in result.stderr  # the schema's views are read, not skipped
    assert "4 issues" in result.stdout + result.stderr


@pytest.mark.parametrize("value", ["yes", "true", "ON"])
def test_https_takes_on_or_off_and_nothing_else(value):
    with pytest.raises(config.ConfigError) as err:
        config.load({**GOOD, "SUPERDISPATCH_HTTPS": value})
    assert str(err.value) == "SUPERDISPATCH_HTTPS must be on or off"
    assert config.load(GOOD).https is False


def test_https_on_redirects_plain_http_but_healthz_and_marks_cookies_secure(tmp_path):
    probe = (
        "from django.test import Client; from django.conf import settings as s; c = Client(); "
        "print(c.get('/admin/login/').status_code, c.get('/healthz').status_code, "
        "c.get('/admin/login/', HTTP_X_FORWARDED_PROTO='https').status_code, "
        "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS > 0)"
    )
    result = _manage(
        ["shell", "-v", "0", "-c", probe],
        tmp_path,
        SUPERDISPATCH_HTTPS="on",
        SUPERDISPATCH_ALLOWED_HOSTS="testserver",
    )
    assert result.stdout.split() == ["301", "200", "200", "True", "True", "True"], result.stderr


# --- The admin sign-in -------------------------------------------------------------------


def _sign_in(client, password):
    return client.post("/admin/login/?next=/admin/", {"username": "op", "password": password})


@pytest.mark.django_db
def test_repeated_wrong_passwords_lock_the_admin_sign_in_even_for_the_right_one(client):
    from django.core.management import call_command

    call_command("create_operator", "--username", "op", "--password", "pw-for-tests-1")
    answers = [_sign_in(client, "wrong-guess").status_code for _ in range(settings.AXES_FAILURE_LIMIT)]
    # The form again until the limit; the failure that reaches it is answered as a lockout.
    assert answers == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    refused = _sign_in(client, "pw-for-tests-1")
    assert refused.status_code == 429
    assert client.get("/admin/").status_code == 302  # not signed in


@pytest.mark.django_db
def test_fewer_wrong_passwords_than_the_limit_still_let_the_right_one_in(client):
    from django.core.management import call_command

    call_command("create_operator", "--username", "op", "--password", "pw-for-tests-1")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        _sign_in(client, "wrong-guess")
    assert _sign_in(client, "pw-for-tests-1").status_code == 302
    assert client.get("/admin/").status_code == 200


# --- Operator token rotation -------------------------------------------------------------


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def test_the_operator_digest_setting_takes_a_comma_separated_list():
    cfg = config.load({**GOOD, "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": f"{_digest('old')}, {_digest('new')}"})
    assert cfg.operator_token_sha256 == (_digest("old"), _digest("new"))
    assert config.load(GOOD).operator_token_sha256 == (GOOD["SUPERDISPATCH_OPERATOR_TOKEN_SHA256"],)


@pytest.mark.parametrize("value", [f"{'a' * 64},", f"{'a' * 64},ABC", f"{'a' * 64},,{'b' * 64}"])
def test_a_bad_entry_in_the_list_is_named_by_the_setting_and_never_shown(value):
    with pytest.raises(config.ConfigError) as err:
        config.load({**GOOD, "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": value})
    rule = next(r for n, _, r in config.declared() if n == "SUPERDISPATCH_OPERATOR_TOKEN_SHA256")
    assert str(err.value) == f"SUPERDISPATCH_OPERATOR_TOKEN_SHA256 must be {rule}"


@pytest.mark.django_db
def test_during_a_rotation_old_and_new_tokens_both_work_and_nothing_else_does():
    rotated = replace(
        settings.SUPERDISPATCH, operator_token_sha256=(_digest("old-token"), _digest("new-token"))
    )
    with override_settings(SUPERDISPATCH=rotated):
        client = Client()  # builds its middleware under the rotated settings
        for token, status in (("old-token", 200), ("new-token", 200), ("other", 401)):
            assert client.get("/v1/boards", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == status, token


def test_every_configured_digest_is_compared_even_when_the_first_matches(monkeypatch):
    compared = []
    real = hmac.compare_digest

    def counting(a, b):
        compared.append(b)
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", counting)
    digests = (_digest("first"), _digest("second"), _digest("third"))
    assert auth.token_matches("Bearer first", digests)
    assert compared == list(digests)
    compared.clear()
    assert not auth.token_matches("Bearer nobody", digests) and compared == list(digests)
