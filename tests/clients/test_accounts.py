"""Accounts: tokens minted, cached per audience and refreshed; the dispatch policy asked."""

from __future__ import annotations

import pytest

from placement.facts import PolicyVerdict, Requires
from superdispatch.clients import Accounts, BadShape, Refused, Unavailable, says_no_policy

from . import bodies
from .conftest import CREDENTIAL, TokenMint
from .server import Reply

TOKEN = "/api/token/service"
DECIDE = "/api/policy/decide"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timed(suite, mint, clock, naps) -> Accounts:
    return Accounts(suite.url, CREDENTIAL, now=clock, sleep=naps.append)


def test_token_is_asked_with_the_credential_for_the_audience_without_trailing_slash(suite, accounts):
    assert accounts.token("http://pipeline.example/") == "tok-SECRET-1"
    (asked,) = suite.hits("POST", TOKEN)
    assert asked.headers["authorization"] == f"Bearer {CREDENTIAL}"
    assert asked.body == {"audience": "http://pipeline.example"}


def test_token_is_cached_until_thirty_seconds_before_expiry(suite, timed, clock):
    first = timed.token("http://pipeline.example")
    clock.now += 269
    assert timed.token("http://pipeline.example") == first
    clock.now += 1  # 270 s of 300: thirty seconds are left
    assert timed.token("http://pipeline.example") != first
    assert len(suite.hits("POST", TOKEN)) == 2


def test_a_good_token_is_used_while_accounts_cannot_renew_it(suite, mint, timed, clock):
    """Accounts down in a token's last thirty seconds costs nothing until the token expires:
    it is used meanwhile, and its renewal asked for again every few seconds, not every call."""
    first = timed.token("http://pipeline.example")
    clock.now += 275
    suite.route("POST", TOKEN, Reply(503))
    assert timed.token("http://pipeline.example") == first  # three tries, then the one in hand
    clock.now += 4
    assert timed.token("http://pipeline.example") == first  # not asked again yet
    assert len(suite.hits("POST", TOKEN)) == 1 + 3
    clock.now += 1
    suite.route("POST", TOKEN, mint)
    assert timed.token("http://pipeline.example") != first  # five seconds on: asked, and renewed
    assert len(suite.hits("POST", TOKEN)) == 1 + 3 + 1


@pytest.mark.parametrize("answer", [Reply(503), Reply(200, ["tok-SECRET"])])
def test_an_expired_token_is_not_used_when_accounts_cannot_renew_it(suite, timed, clock, answer):
    timed.token("http://pipeline.example")
    clock.now += 275
    suite.route("POST", TOKEN, answer)
    timed.token("http://pipeline.example")  # kept for now
    clock.now += 25  # 300 s: expired
    with pytest.raises((Unavailable, BadShape)):
        timed.token("http://pipeline.example")


def test_a_refused_renewal_is_not_waited_out(suite, timed, clock):
    timed.token("http://pipeline.example")
    clock.now += 275
    suite.route("POST", TOKEN, Reply(401, {"error": {"code": "credential_revoked", "message": "no"}}))
    with pytest.raises(Refused):
        timed.token("http://pipeline.example")


def test_tokens_are_cached_per_audience(suite, timed):
    pipeline = timed.token("http://pipeline.example")
    hub = timed.token("http://hub.example")
    assert pipeline != hub
    assert timed.token("http://pipeline.example/") == pipeline
    assert [r.body["audience"] for r in suite.hits("POST", TOKEN)] == [
        "http://pipeline.example",
        "http://hub.example",
    ]


def test_token_living_under_thirty_seconds_is_asked_for_each_time(suite, clock, naps):
    suite.route("POST", TOKEN, TokenMint(expires_in=20))
    accounts = Accounts(suite.url, CREDENTIAL, now=clock, sleep=naps.append)
    accounts.token("http://pipeline.example")
    accounts.token("http://pipeline.example")
    assert len(suite.hits("POST", TOKEN)) == 2


def test_forgotten_token_is_asked_for_again(suite, accounts):
    accounts.token("http://pipeline.example")
    accounts.forget("http://pipeline.example/")
    accounts.token("http://pipeline.example")
    assert len(suite.hits("POST", TOKEN)) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 423])
def test_token_refusal_is_permanent_and_not_retried(suite, naps, status):
    suite.route("POST", TOKEN, Reply(status, {"error": {"code": "nope", "message": "no"}}))
    accounts = Accounts(suite.url, CREDENTIAL, sleep=naps.append)
    with pytest.raises(Refused) as caught:
        accounts.token("http://pipeline.example")
    assert (caught.value.product, caught.value.status, caught.value.permanent) == ("accounts", status, True)
    assert len(suite.hits("POST", TOKEN)) == 1


def test_token_request_is_retried_like_a_read_on_an_outage(suite, naps):
    suite.route("POST", TOKEN, Reply(503), TokenMint())
    accounts = Accounts(suite.url, CREDENTIAL, sleep=naps.append)
    assert accounts.token("http://pipeline.example") == "tok-SECRET-1"
    assert len(suite.hits("POST", TOKEN)) == 2


@pytest.mark.parametrize(
    "answer",
    [
        {"token_type": "Bearer", "expires_in": 300},
        {"access_token": "", "token_type": "Bearer", "expires_in": 300},
        {"access_token": "tok-SECRET", "token_type": "Basic", "expires_in": 300},
        {"access_token": "tok-SECRET", "token_type": "Bearer", "expires_in": "300"},
        {"access_token": "tok-SECRET", "token_type": "Bearer", "expires_in": 0},
        ["tok-SECRET"],
    ],
)
def test_unreadable_token_answer_is_bad_shape_and_never_names_the_token(suite, naps, answer):
    suite.route("POST", TOKEN, Reply(200, answer))
    accounts = Accounts(suite.url, CREDENTIAL, sleep=naps.append)
    with pytest.raises(BadShape) as caught:
        accounts.token("http://pipeline.example")
    assert "tok-SECRET" not in str(caught.value)


def test_decide_sends_the_question_with_no_labels_and_reads_the_verdict(suite, accounts):
    suite.route("POST", DECIDE, Reply(200, bodies.verdict(allow=False, reasons=["grant"])))
    verdict = accounts.decide(
        "prn_ada", "agt_ada", "brd_1", "review", Requires(all=("code-review",), any=("py", "go"))
    )
    assert verdict == PolicyVerdict(allow=False, reasons=("grant",), policy_version="pol_1")
    (asked,) = suite.hits("POST", DECIDE)
    assert asked.body == {
        "principalId": "prn_ada",
        "agentId": "agt_ada",
        "boardId": "brd_1",
        "stageKey": "review",
        "labels": [],
        "capabilities": {"all": ["code-review"], "any": ["py", "go"]},
    }
    assert asked.headers["authorization"] == f"Bearer {CREDENTIAL}"


def test_decide_reads_a_limit_rejection(suite, accounts):
    suite.route(
        "POST",
        DECIDE,
        Reply(
            200,
            bodies.verdict(allow=False, reasons=["limit:max-runs"], limit={"maxRuns": 3, "windowHours": 24}),
        ),
    )
    verdict = accounts.decide("prn_ada", "agt_ada", "brd_1", "review", Requires())
    assert (verdict.limit_max_runs, verdict.limit_window_hours) == (3, 24.0)
    assert verdict.holds_in_window == 0  # ours to count, not Accounts'


def test_workspace_without_a_policy_is_told_apart(suite, accounts):
    suite.route("POST", DECIDE, Reply(200, {"allow": True, "reasons": ["no-policy"], "policyVersion": None}))
    verdict = accounts.decide("prn_ada", "agt_ada", "brd_1", "review", Requires())
    assert says_no_policy(verdict)
    assert not says_no_policy(PolicyVerdict(allow=True, reasons=()))


def test_decide_is_asked_once_on_an_outage(suite, accounts):
    suite.route("POST", DECIDE, Reply(503), Reply(200, bodies.verdict()))
    with pytest.raises(Unavailable):
        accounts.decide("prn_ada", "agt_ada", "brd_1", "review", Requires())
    assert len(suite.hits("POST", DECIDE)) == 1


@pytest.mark.parametrize(
    "answer",
    [
        {"reasons": [], "policyVersion": None},
        {"allow": "yes", "reasons": [], "policyVersion": None},
        {"allow": True, "policyVersion": None},
        {"allow": True, "reasons": [3], "policyVersion": None},
        {"allow": False, "reasons": ["limit:x"], "limit": {"maxRuns": "3", "windowHours": 24}},
        {"allow": False, "reasons": ["limit:x"], "limit": {"windowHours": 24}},
    ],
)
def test_unreadable_verdict_is_bad_shape(suite, accounts, answer):
    suite.route("POST", DECIDE, Reply(200, answer))
    with pytest.raises(BadShape):
        accounts.decide("prn_ada", "agt_ada", "brd_1", "review", Requires())
