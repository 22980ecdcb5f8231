"""The operator token's digest in either case, and the relay secret's stated minimum."""

import dataclasses
import hashlib
import re
from pathlib import Path

import pytest

from common import config
from tests.service.test_config import GOOD

SETTINGS_DOC = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
TOKEN = "an-operator-token"
DIGEST = hashlib.sha256(TOKEN.encode()).hexdigest()


def _settings_row(name: str) -> str:
    [row] = [line for line in SETTINGS_DOC.read_text().splitlines() if line.startswith(f"| `{name}` |")]
    return row


@pytest.mark.parametrize(
    "digest", [DIGEST.upper(), DIGEST[:32].upper() + DIGEST[32:], DIGEST], ids=["upper", "mixed", "lower"]
)
def test_the_operator_token_digest_is_read_in_either_case(digest):
    assert config.load({**GOOD, "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": digest}).operator_token_sha256 == (
        DIGEST,
    )


@pytest.mark.parametrize(
    "digest",
    [DIGEST[:63], DIGEST + "0", "g" * 64, DIGEST.upper()[:-1] + "G", DIGEST + ",", DIGEST + "," + "g" * 64],
    ids=["63", "65", "not-hex", "upper-not-hex", "empty-entry", "one-bad-entry"],
)
def test_a_digest_that_is_not_64_hex_digits_is_still_refused(digest):
    with pytest.raises(config.ConfigError) as err:
        config.load({**GOOD, "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": digest})
    assert str(err.value).startswith("SUPERDISPATCH_OPERATOR_TOKEN_SHA256 must be 64 hex digits")


@pytest.mark.django_db
def test_an_uppercase_digest_lets_the_token_in_and_still_refuses_another(client, settings):
    read = config.load({**GOOD, "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": DIGEST.upper()})
    settings.SUPERDISPATCH = dataclasses.replace(
        settings.SUPERDISPATCH, operator_token_sha256=read.operator_token_sha256
    )
    assert client.get("/v1/boards", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    assert client.get("/v1/boards", HTTP_AUTHORIZATION="Bearer another-token").status_code == 401


def test_the_readme_says_the_digest_may_be_either_case():
    assert re.search(r"64 hex digits, either case", _settings_row("SUPERDISPATCH_OPERATOR_TOKEN_SHA256"))


RELAY_RULE = "at least 16 characters, none of them whitespace"


def test_the_relay_secret_needs_16_characters_and_the_readme_says_so():
    assert RELAY_RULE in _settings_row("TREATY_RELAY_DELIVERY_SECRET")
    config.load({**GOOD, "TREATY_RELAY_DELIVERY_SECRET": "s" * 16})
    for short_or_spaced in ("s" * 15, "s" * 8 + " " + "s" * 8):
        with pytest.raises(config.ConfigError) as err:
            config.load({**GOOD, "TREATY_RELAY_DELIVERY_SECRET": short_or_spaced})
        assert str(err.value) == f"TREATY_RELAY_DELIVERY_SECRET must be {RELAY_RULE}"
