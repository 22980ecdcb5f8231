"""The release's smoke test: the checks a release makes before it keeps a new build, changing
nothing, one line each, and an exit status a deploy script can act on."""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta
from typing import Callable

import requests
from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import DatabaseError
from django.utils import timezone

from common.config import Config
from records.models import LoopState
from superdispatch.clients import ClientError, build_clients

HEALTHZ_TIMEOUT = (3.05, 10)
WAIT_STEP_S = 2.0
# A sweep older than this many intervals past when the next was due says the loop has stopped.
STALE_INTERVALS = 2


class Failed(Exception):
    """Why a check failed, in words safe to print (no credential, token or body)."""


def check_healthz(url: str) -> str:
    """`/healthz` on the running service answers SuperDispatch's `{ok: true}`."""
    where = f"{url}/healthz"
    try:
        response = requests.get(where, timeout=HEALTHZ_TIMEOUT, allow_redirects=False)
    except requests.RequestException as err:
        raise Failed(f"{where} unreachable ({type(err).__name__})")
    if response.status_code != 200:
        raise Failed(f"{where} answered {response.status_code}")
    try:
        body = response.json()
    except ValueError:
        raise Failed(f"{where} answered something other than JSON")
    if body != {"ok": True, "service": "superdispatch"}:
        raise Failed(f"{where} answered, but not as SuperDispatch")
    return f"{where} answered ok"


def check_token(cfg: Config, clients) -> str:
    """Accounts mints a token for SuperPipeline with this service's credential."""
    try:
        clients.accounts.token(cfg.superpipeline_url)
    except ClientError as err:
        raise Failed(str(err))
    return f"Accounts at {cfg.org_plane_url} minted a token for {cfg.superpipeline_url}"


def check_hub(cfg: Config, clients) -> str:
    """AgentPod answers a read (its station registry) at AGENTPOD_URL."""
    try:
        stations = clients.agentpod.stations()
    except ClientError as err:
        raise Failed(str(err))
    registry = "no station registry" if stations is None else f"{len(stations)} stations"
    return f"the hub at {cfg.agentpod_url} answered ({registry})"


def check_first_sweep(cfg: Config, now: datetime) -> str:
    """The loop has swept (its state row says when), and not so long ago that it has stopped."""
    try:
        state = LoopState.objects.filter(pk="loop").first()
    except DatabaseError as err:
        raise Failed(f"the store cannot be read ({type(err).__name__}; migrated?)")
    if state is None or state.last_sweep_at is None:
        raise Failed("no sweep recorded yet (is beat running, and a worker?)")
    interval = timedelta(seconds=cfg.sweep_seconds)
    due = state.next_sweep_at or state.last_sweep_at + interval  # later while backing off
    age = int((now - state.last_sweep_at).total_seconds())
    if now > due + STALE_INTERVALS * interval:
        raise Failed(
            f"the last sweep was {age} s ago, long past the next one's time (is beat running, and a worker?)"
        )
    return f"last sweep {state.last_sweep_at.isoformat()} ({age} s ago)"


def run_checks(cfg: Config, url: str, now: datetime) -> list[tuple[str, bool, str]]:
    """Every check, in the release's order: (name, passed, what it saw or why not)."""
    clients = build_clients(cfg)
    checks: list[tuple[str, Callable[[], str]]] = [
        ("healthz", lambda: check_healthz(url)),
        ("accounts-token", lambda: check_token(cfg, clients)),
        ("hub", lambda: check_hub(cfg, clients)),
        ("first-sweep", lambda: check_first_sweep(cfg, now)),
    ]
    results = []
    for name, check in checks:
        try:
            results.append((name, True, check()))
        except Failed as failure:
            results.append((name, False, str(failure)))
    return results


class Command(BaseCommand):
    help = (
        "The release's smoke test: /healthz, a token from Accounts, the hub, and the "
        "loop's sweeps. Changes nothing; exits 0 only when every check passes."
    )

    def add_arguments(self, parser):
        parser.add_argument("--url", help="where the service answers (default: http://127.0.0.1:$PORT)")
        parser.add_argument(
            "--wait",
            type=float,
            default=0.0,
            metavar="SECONDS",
            help="check again every 2 s for up to this long until all pass "
            "(a service just started has not swept yet)",
        )

    def handle(self, *args, url: str | None, wait: float, **options):
        cfg = settings.SUPERDISPATCH
        url = (url or f"http://127.0.0.1:{cfg.port}").rstrip("/")
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            results = run_checks(cfg, url, timezone.now())
            if all(passed for _, passed, _ in results) or time.monotonic() >= deadline:
                break
            time.sleep(WAIT_STEP_S)
        for name, passed, said in results:
            self.stdout.write(f"{name}: {'ok' if passed else 'failed'}: {said}")
        failed = [name for name, passed, _ in results if not passed]
        if not failed:
            self.stdout.write(f"smoke: ok, {len(results)} of {len(results)} checks passed")
            return
        self.stderr.write(
            f"smoke: failed: {failed[0]}"
            + (f" (first of {len(failed)} failed checks)" if len(failed) > 1 else "")
        )
        sys.exit(1)
