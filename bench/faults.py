"""Faults, measured: each fault injected mid-sweep into real processes, and the
invariants checked after each; or, with `--soak N`, the demo's scenario for N seconds.

Everything is real and local: the stand-in suite over HTTP on 127.0.0.1 (`SandboxServers`, in
this process, on the wall clock) with its simulated agents pulling and the relay delivering
to the webhook, the web app (`manage.py serve`), two workers of the sweeps' queue (`worker -Q
celery`, one process each), one of the placement queue (`worker -Q placement`, two
processes), `celery beat`, PostgreSQL and Redis (a database and a Redis db of the bench's own).
Beat sweeps every 5 s (`SUPERDISPATCH_SWEEP_SECONDS`, its floor), in shards of 4 boards;
leases last 30 s (`SUPERDISPATCH_LEASE_SECONDS`); the dispatch policy is asked (so Accounts is
on every decision's path) and SuperWitness is read for history.

The workspace: 12 boards, cards arriving on each (4 a minute, 2 waiting at the start), 36
agents each rostered on 3 of them, pulling every 2 s and working a card for about 15 s; and
10 storm boards with 5 agents each that take no work, for the relay storm (5 of each board's
90 storm cards are held, the rest wait, and each delivery's row says which). The faults, each
injected while a sweep is under way (its shards written and a board leased):

- each product (SuperPipeline, AgentPod, Accounts, SuperWitness) down (503 on every route),
  slow (every answer 8 s late, past the clients' 5 s read timeout), answering garbage (a
  proxy's HTML page with a 200) and answering 401 (every token refused), until the sweep under
  way has ended; then cleared;
- a worker of the sweeps' queue killed with SIGKILL (its whole process group) while its pass
  holds leases, and started again as a supervisor would: the killed pass's boards wait for
  their lease to lapse, and the next pass must place every card that was waiting on them;
- PostgreSQL restarted (`pg_ctlcluster … restart`), and Redis restarted (`redis-cli shutdown
  nosave`, then started again: every queued task is lost with it);
- a relay storm: 1,000 card.ready deliveries in 10 s to the storm boards, 100 of them
  redeliveries (an earlier delivery's id, body and a fresh signature);
- two sweeps sent at once, besides beat's own.

After each: a sweep that starts after the fault is cleared must read every board (within
90 s), the deliveries taken before it must have been acted on (within 150 s: a relayed card's
task lost with Redis is sent again by a sweep two minutes on), and the invariants of
tests/support/invariants.py must hold over everything recorded so far: no decision without
its candidates, no card held twice at once, no hold recorded that SuperPipeline did not
grant, every card.ready the webhook took placed, or its delivery's row saying why not
(waiting for a free agent, not due, unread, left to the next sweep, ignored). Throughout each
fault `/healthz` is asked every 100 ms, timeout 2 s: it answers when it says 200 within that,
or 503 with Retry-After while PostgreSQL is really down (from the restart command until the
server is ready again, plus a second); a 500, another status, a refused connection or a
timeout is a failure. The webhook likewise must never answer a 5xx other than 503 (the relay
delivers a 503 again). A fault is survived when the service recovered, the invariants hold,
neither /healthz nor the webhook failed, and none of the service's processes ended (nothing
here restarts one but the SIGKILL fault, which starts its worker again as a supervisor would).
For each delivery found lost, the store's story of it is printed: its row, and its card's
decisions.

Last line: `faults=N survived=N double_holds=0 orphan_decisions=0 lost_events=0`.

`--soak N`: the demo's scenario (sandbox/scenarios/demo.json, agents on the wall clock as
`make demo` runs them, with its settings from .env.demo: a sweep every 10 s, the policy asked,
candidates `all`, events and chat to the stand-in's receiver) for N seconds with Procfile.demo's
processes (web, a sweeps worker and a placement worker of two processes each, beat) and the
relay, /healthz watched throughout, the same invariants at the end. Each process's resident
memory (its children included) is printed each minute, and at the end beside its figure after
the first minute (the warm-up: imports, caches, connections); `rss_growth_pct` is the largest
growth of any process between the two. Last line: `soak_s=N survived=… double_holds=…
orphan_decisions=… lost_events=… rss_growth_pct=…`.

Run: .venv/bin/python bench/faults.py [--only NAME,…] [--database NAME] [--redis URL]
     .venv/bin/python bench/faults.py --soak 600
PostgreSQL is restarted once and Redis once: others on the same servers see a blip.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import requests

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import _common  # noqa: E402
from bench._common import (  # noqa: E402
    PYTHON,
    REVIEW_AND_SHIP,
    ROOT,
    base_env,
    free_port,
    fresh_database,
    percentile,
    signed_headers,
    stop,
    temp_dir,
)
from bench._results import last_line  # noqa: E402
from sandbox import (  # noqa: E402
    RealtimeDriver,
    Receiver,
    ReceiverServer,
    SandboxServers,
    Simulation,
    Suite,
)
from sandbox.clock import system_clock  # noqa: E402
from sandbox.scenario import parse_scenario  # noqa: E402
from sandbox.suite import FAULTS, PRODUCTS  # noqa: E402

OPERATOR_TOKEN = "bench-operator-token"
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/12")
DATABASE = "superdispatch_bench_faults"
BOARDS = [f"brd_f{b:02d}" for b in range(12)]
STORM_BOARDS = [f"brd_s{b}" for b in range(10)]
STORM_AGENTS = 5  # on each storm board: most of its 90 cards wait for one of them
STORM_CARDS, STORM_REDELIVERED, STORM_S = 900, 100, 10.0
# Leases of 30 s: the passes' tasks are cut short at 20 s, past the longest read a product
# too slow to answer costs (three tries of 5 s, and the backoff between them).
SWEEP_S, SHARD_BOARDS, LEASE_S = 5, 4, 30
HEALTH_EVERY_S, HEALTH_TIMEOUT_S = 0.1, 2.0
RECOVER_S = 90
RESENT_S = 150  # a sweep sends a relayed card's lost task again two minutes on
PG_VERSION = (os.listdir("/etc/postgresql") or ["15"])[0] if os.path.isdir("/etc/postgresql") else "15"
REDIS_START = [
    "redis-server",
    "--daemonize",
    "yes",
    "--bind",
    "127.0.0.1",
    "-::1",
    "--port",
    "6379",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    "/var/lib/redis",
    "--logfile",
    "/var/log/redis/ci.log",
]


def now() -> datetime:
    return datetime.now(timezone.utc)


def fault_scenario() -> dict:
    agents = [
        {
            "id": f"agt_{a:02d}",
            "capabilities": ["code-review"],
            "speedSeconds": 15,
            "pollSeconds": 2,
            "successRate": 0.85,
            "noShow": 0.05,
            "boards": [BOARDS[(a + k) % len(BOARDS)] for k in range(3)],
        }
        for a in range(36)
    ]
    storm = [
        {"id": f"agt_{b}_{a:02d}", "capabilities": ["code-review"], "pollSeconds": 3600, "boards": [b]}
        for b in STORM_BOARDS
        for a in range(STORM_AGENTS)
    ]
    return {
        "name": "faults",
        "seed": 14,
        "start": "2026-11-13T10:00:00.000Z",
        "boards": [
            {"id": b, "arrivalPerMinute": 4, "initialCards": 2, "stages": REVIEW_AND_SHIP} for b in BOARDS
        ]
        + [{"id": b, "stages": REVIEW_AND_SHIP} for b in STORM_BOARDS],
        "agents": agents + storm,
    }


# --- The stand: the suite, the service's processes, and what is watched -------------------


class Webhook:
    """The relay's target: posts each delivery to the webhook and notes the answer."""

    def __init__(self, url: str, ledger) -> None:
        self.url, self.ledger = url, ledger
        self._local = threading.local()

    def __call__(self, headers: dict, body: bytes) -> int | None:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        delivery = headers.get("X-Treaty-Delivery", "")
        try:
            answer = session.post(self.url, data=body, headers=headers, timeout=(2, 10))
        except requests.RequestException:
            self.ledger.note(delivery, body, None, None, now())
            return None
        self.ledger.note(delivery, body, answer.status_code, answer.content, now())
        return answer.status_code


class Stand:
    def __init__(
        self,
        spec: dict,
        settings: dict[str, str],
        database: str,
        redis_url: str,
        workers: list[tuple[str, str, int]],
        receiver: bool = False,
    ) -> None:
        self.spec, self.database, self.redis_url = spec, database, redis_url
        self.suite = Suite.from_scenario(parse_scenario(spec), system_clock)
        self.suite.relay.max_attempts = 20  # a real relay keeps trying for a long while
        self.suite.relay.held_back.update(STORM_BOARDS)  # the storm sends its own
        self.ledger = None  # once Django is set up
        self.board_reads: list[tuple[str, float]] = []
        board_json = self.suite.pipeline.board_json

        def reading(board_id):
            self.board_reads.append((board_id, time.monotonic()))
            return board_json(board_id)

        self.suite.pipeline.board_json = reading
        self.servers = SandboxServers(self.suite)
        self.settings, self.worker_specs = settings, workers
        self.receiver = ReceiverServer(Receiver("bench-events-secret-0123")) if receiver else None
        self.processes: dict[str, subprocess.Popen] = {}
        self.store_down_since: float | None = None
        self.store_down_until: float | None = None
        self.driver: RealtimeDriver | None = None

    # Processes
    def start(self) -> None:
        self.servers.start()
        if self.receiver is not None:
            self.receiver.start()
        self.data_dir = temp_dir("faults")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        url = fresh_database("postgres", self.database, self.data_dir)
        env = base_env(self.suite.dispatch_config().as_env(), self.data_dir, url, self.redis_url)
        env.update(
            {
                "PORT": str(self.port),
                "OPENBLAS_NUM_THREADS": "1",
                "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": hashlib.sha256(OPERATOR_TOKEN.encode()).hexdigest(),
                **self.settings,
            }
        )
        if self.receiver is not None:
            env.update(
                {
                    "SUPERDISPATCH_EVENTS_URL": self.receiver.url + "/events",
                    "SUPERDISPATCH_EVENTS_SECRET": self.receiver.receiver.secret,
                    "SUPERDISPATCH_CHAT_WEBHOOK_URL": self.receiver.url + "/chat",
                    "SUPERDISPATCH_PUBLIC_URL": self.base,
                }
            )
        self.env = env
        os.environ.update(env)
        import redis

        redis.Redis.from_url(self.redis_url).flushdb()
        subprocess.run(self.manage + ["migrate", "-v", "0"], env=env, check=True, cwd=ROOT)
        import django

        django.setup()
        from tests.support.invariants import RelayLedger

        self.ledger = RelayLedger()
        self.log = open(os.path.join(self.data_dir, "processes.log"), "w")
        self.spawn("web", self.manage + ["serve"])
        for name, queue, concurrency in self.worker_specs:
            self.spawn_worker(name, queue, concurrency)
        self.spawn(
            "beat", self.celery + ["beat", "--loglevel=warning", f"--pidfile={self.data_dir}/beat.pid"]
        )
        wait_until(self.answers, 60, "the web app starting")
        from superdispatch.celery import app

        inspect = app.control.inspect(timeout=2)
        wait_until(lambda: len(inspect.ping() or {}) >= len(self.worker_specs), 90, "the workers starting")
        http = requests.Session()
        for board in self.spec["boards"]:
            http.put(
                f"{self.base}/v1/boards/{board['id']}",
                timeout=10,
                headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"},
            ).raise_for_status()
        boards = [b["id"] for b in self.spec["boards"]]

        def windows_set() -> bool:
            with self.suite.lock:
                return all(self.suite.pipeline.board(b).placement_window_seconds for b in boards)

        wait_until(windows_set, 60, "the workers setting the placement windows")
        self.suite.relay.target = Webhook(self.base + "/v1/relay/events", self.ledger)
        self.driver = RealtimeDriver(Simulation(self.suite), tick=1.0)
        self.driver.start()

    @property
    def manage(self) -> list[str]:
        return [PYTHON, os.path.join(ROOT, "manage.py")]

    @property
    def celery(self) -> list[str]:
        return [os.path.join(os.path.dirname(PYTHON), "celery"), "-A", "superdispatch"]

    def spawn(self, name: str, argv: list[str]) -> None:
        # A session of its own: the whole process group can be killed at once.
        self.processes[name] = subprocess.Popen(
            argv, env=self.env, cwd=ROOT, stdout=self.log, stderr=self.log, start_new_session=True
        )

    def spawn_worker(self, name: str, queue: str, concurrency: int, generation: int = 0) -> None:
        self.spawn(
            name,
            self.celery
            + [
                "worker",
                "--loglevel=warning",
                "-Q",
                queue,
                f"--concurrency={concurrency}",
                "-n",
                f"faults-{name}-{generation}-{os.getpid()}@%h",
            ],
        )

    def stop(self) -> None:
        if self.driver is not None:
            self.driver.stop()
        if self.receiver is not None:
            self.receiver.stop()
        stop(list(self.processes.values()), self.servers, "postgres", self.database, wait_s=30)

    # Watching
    def exited(self) -> list[str]:
        """The service's processes that have ended (a crash: none is stopped on purpose but
        by SIGKILL, which starts its worker again), each with its exit status."""
        return [
            f"{name} (exit {process.returncode})"
            for name, process in self.processes.items()
            if process.poll() is not None
        ]

    def healthz(self) -> tuple[int, dict]:
        answer = requests.get(self.base + "/healthz", timeout=HEALTH_TIMEOUT_S)
        return answer.status_code, dict(answer.headers)

    def answers(self) -> bool:
        try:
            return self.healthz()[0] == 200
        except requests.RequestException:
            return False

    def store_down(self) -> bool:
        since, until = self.store_down_since, self.store_down_until
        t = time.monotonic()
        return since is not None and since <= t and (until is None or t <= until)

    def watch(self):
        from tests.support.invariants import HealthWatch

        return HealthWatch(lambda: self.healthz(), self.store_down, HEALTH_EVERY_S)

    def check(self, taken_by: datetime | None = None):
        """The invariants; relay deliveries judged when taken by `taken_by` (a sweep has
        passed every board since), else by 10 s ago."""
        from tests.support.invariants import check

        by = taken_by or now() - timedelta(seconds=10)
        return db(lambda: check(self.suite.pipeline, self.suite.lock, self.ledger, by))

    def rss_mb(self) -> dict[str, float]:
        """Each service process's resident memory in MB, its children (gunicorn's and the
        pool's) included, by name: web, each worker, beat."""
        return {
            name: sum(rss_kb(pid) for pid in [process.pid, *children(process.pid)]) / 1024
            for name, process in self.processes.items()
        }


def rss_kb(pid: int) -> int:
    """A process's resident memory in kB (VmRSS), 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def wait_until(ready, timeout: float, what: str, every: float = 0.05) -> float:
    return _common.wait_until(ready, timeout, what, every, "faults bench")


def waited(ready, timeout: float, every: float = 0.05) -> float | None:
    """Like wait_until, but None when it did not happen in time."""
    started = time.monotonic()
    while not ready():
        if time.monotonic() - started > timeout:
            return None
        time.sleep(every)
    return time.monotonic() - started


def db(read):
    """One read of the store from this process, again after a dropped connection."""
    from django.db import InterfaceError, OperationalError, connection

    for attempt in range(60):
        try:
            return read()
        except (OperationalError, InterfaceError):
            connection.close()
            time.sleep(0.5)
    return read()


# --- Sweeps, as the store shows them ----------------------------------------------------------


def newest_sweep_start() -> datetime | None:
    from records.models import SweepShard

    return db(
        lambda: (
            SweepShard.objects.filter(index=0)
            .order_by("-started_at")
            .values_list("started_at", flat=True)
            .first()
        )
    )


def mid_sweep(timeout: float = 30) -> tuple[str, datetime]:
    """Wait for a sweep that started from now on to be under way: its shards written, none
    summed up yet, and a board leased. Its id and start."""
    from records.models import Board, SweepShard

    after = newest_sweep_start() or now() - timedelta(days=1)
    found: list = []

    def under_way() -> bool:
        row = (
            SweepShard.objects.filter(index=0, started_at__gt=after)
            .order_by("started_at")
            .values_list("sweep_id", "started_at")
            .first()
        )
        if row is None or not Board.objects.exclude(lease_owner="").exists():
            return False
        found[:] = row
        return True

    wait_until(lambda: db(under_way), timeout, "a sweep starting", every=0.01)
    return found[0], found[1]


def shards_done(sweep_id: str) -> tuple[int, int]:
    from records.models import SweepShard

    rows = db(lambda: list(SweepShard.objects.filter(sweep_id=sweep_id).values_list("summary", flat=True)))
    return sum(1 for s in rows if s is not None), len(rows)


def sweep_over(sweep_id: str) -> bool:
    from records.models import SweepShard

    return db(
        lambda: SweepShard.objects.filter(sweep_id=sweep_id, index=0, finished_at__isnull=False).exists()
    )


def clean_sweep_after(moment: datetime) -> datetime | None:
    """The start of a sweep started after `moment` that has ended, every shard reporting and
    no board unread, nor read without its roster; None while there is none."""
    from records.models import SweepShard

    def read() -> datetime | None:
        for sweep_id, started in (
            SweepShard.objects.filter(index=0, started_at__gt=moment, finished_at__isnull=False)
            .order_by("started_at")
            .values_list("sweep_id", "started_at")
        ):
            summaries = list(SweepShard.objects.filter(sweep_id=sweep_id).values_list("summary", flat=True))
            unread = sum(s["unread"] + s.get("unrostered", 0) for s in summaries if s)
            if all(s is not None for s in summaries) and unread == 0:
                return started
        return None

    return db(read)


def story(delivery_id: str, card_id: str | None) -> str:
    """What the store says of a lost delivery: its row, and the card's decisions."""
    from records.models import Decision, RelayDelivery

    def read() -> str:
        row = RelayDelivery.objects.filter(pk=delivery_id).values_list("received_at", "outcome").first()
        said = f"row received {row[0].isoformat()} outcome {row[1] or '(none)'}" if row else "no delivery row"
        decisions = [
            f"{at.isoformat()} ready {ready.isoformat() if ready else None} {reason}"
            for at, ready, reason in Decision.objects.filter(card_id=card_id or "")
            .order_by("created_at")
            .values_list("created_at", "ladder_ready_at", "reason")
        ]
        return f"{said}; decisions: {', '.join(decisions) or 'none'}"

    return db(read)


# --- One fault ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    name: str
    survived: bool
    line: str


class Faults:
    def __init__(self, stand: Stand) -> None:
        self.stand = stand
        self.last = stand.check()
        self.outcomes: list[Outcome] = []
        self.exited: list[str] = []  # processes found ended, each judged once

    def run(self, name: str, inject, clear=lambda: None, hold=None) -> None:
        """Inject mid-sweep, hold (by default until the sweep under way has ended), clear,
        wait for a clean sweep, then judge."""
        stand = self.stand
        started_at, answers_before = now(), len(stand.ledger.answers)
        with stand.watch() as health:
            sweep_id, _ = mid_sweep()
            done, shards = shards_done(sweep_id)
            detail = inject() or ""
            if hold is None:
                waited(lambda: sweep_over(sweep_id), 60, every=0.1)
            else:
                hold()
            clear()
            cleared, clean = now(), []
            recovered = waited(
                lambda: clean.append(clean_sweep_after(cleared)) or clean[-1], RECOVER_S, every=0.2
            )
            # Deliveries taken before the clean sweep began: acted on, by it if not before.
            by = clean[-1] if recovered is not None else now() - timedelta(seconds=10)
            window = {a.delivery_id for a in stand.ledger.answers[answers_before:]}
            # A relayed card's task lost with Redis is sent again by a sweep two minutes on.
            waited(lambda: not window & set(stand.check(by).lost_events), RESENT_S, every=1.0)
        found = stand.check(by)
        answers = stand.ledger.answers[answers_before:]
        window = {a.delivery_id for a in answers}
        failed = [a for a in answers if a.status is None or (a.status >= 500 and a.status != 503)]
        new = {
            "double holds": len(found.double_holds) - len(self.last.double_holds),
            "orphan decisions": len(found.orphan_decisions) - len(self.last.orphan_decisions),
            "holds not granted": len(found.ungranted_holds) - len(self.last.ungranted_holds),
            "lost events": len(window & set(found.lost_events)),
        }
        exited = [e for e in stand.exited() if e not in self.exited]
        self.exited += exited
        survived = (
            recovered is not None
            and not any(n > 0 for n in new.values())
            and health.tally.failed == 0
            and not failed
            and not exited
        )
        tally = health.tally
        fails = ", ".join(f"{n} {k}" for k, n in sorted(tally.failures.items())) or "none failed"
        line = (
            f"  {name}: {'survived' if survived else 'NOT SURVIVED'}; injected with "
            f"{done} of {shards} shards done{detail}; "
            + (
                f"recovered {recovered:.1f} s after clearing"
                if recovered is not None
                else f"no clean sweep within {RECOVER_S} s of clearing"
            )
            + f"; /healthz {tally.asked} asked, {tally.ok} ok, {tally.not_now} 503 while "
            f"the store was down, {fails}; webhook {len(answers)} answers, "
            f"{sum(1 for a in answers if a.status == 503)} 503, {len(failed)} failed"
            + "".join(f"; {n} new {k}" for k, n in new.items() if n > 0)
            + (f"; ended: {', '.join(exited)}" if exited else "")
            + f" ({(now() - started_at).total_seconds():.0f} s)"
        )
        print(line, flush=True)
        lost = window & set(found.lost_events)
        for answer in [a for a in answers if a.delivery_id in lost][:5]:
            event = answer.event
            print(
                f"    lost: {answer.delivery_id} {event.get('type')} {event.get('boardId')} "
                f"{event.get('cardId')} ts {event.get('ts')}, answered {answer.status} at "
                f"{answer.at.isoformat()}; {story(answer.delivery_id, event.get('cardId'))}",
                flush=True,
            )
        self.outcomes.append(Outcome(name, survived, line))
        self.last = found

    # The faults
    def product(self, product: str, fault: str) -> None:
        toggles = self.stand.suite.toggles
        self.run(
            f"{product} {fault}",
            lambda: toggles.faults.__setitem__(product, fault),
            lambda: toggles.faults.pop(product, None),
        )

    def worker_killed(self) -> None:
        from records.models import Board

        stand = self.stand
        killed: dict = {}
        sweepers = [name for name, queue, _ in stand.worker_specs if queue == "celery"]

        def inject() -> str:
            def leased_by_a_sweeper() -> bool:
                for board_id, owner, until in Board.objects.exclude(lease_owner="").values_list(
                    "board_id", "lease_owner", "lease_until"
                ):
                    pid = int(owner.rsplit(":", 2)[1])  # host:pid:pass
                    for name in sweepers:
                        main = stand.processes[name].pid
                        if pid == main or pid in children(main):
                            killed.update(name=name, owner=owner, until=until)
                            return True
                return False

            wait_until(lambda: db(leased_by_a_sweeper), 30, "a sweeps worker leasing a board", every=0.005)
            process = stand.processes[killed["name"]]
            os.killpg(process.pid, signal.SIGKILL)
            killed["at"], killed["wall"] = time.monotonic(), now()
            process.wait()
            boards = db(
                lambda: list(
                    Board.objects.filter(lease_owner=killed["owner"]).values_list("board_id", flat=True)
                )
            )
            killed["boards"] = boards
            killed["generation"] = killed.get("generation", 0) + 1
            spec = next(s for s in stand.worker_specs if s[0] == killed["name"])
            stand.spawn_worker(*spec, generation=killed["generation"])  # as a supervisor would
            return f"; {killed['name']} killed holding {len(boards)} boards' leases"

        def hold() -> None:
            # Each of its boards waits out its lease, then a pass reads it and places its cards.
            boards, at = set(killed["boards"]), killed["at"]
            first_read: dict[str, float] = {}

            def all_read() -> bool:
                for board_id, t in stand.board_reads:
                    if board_id in boards and t > at:
                        first_read.setdefault(board_id, t)
                return set(first_read) == boards

            waited(all_read, LEASE_S + 60, every=0.1)
            lapse = [first_read[b] - at for b in boards if b in first_read]
            killed["lapse"] = min(lapse) if lapse else None
            killed["unread"] = sorted(boards - set(first_read))
            # No pass may read one of them while the dead pass's lease stands.
            left_s = (killed["until"] - killed["wall"]).total_seconds()
            killed["early"] = sorted(b for b in first_read if first_read[b] - at < left_s - 0.2)
            killed["lease_left_s"] = left_s

        self.run("a sweeps worker SIGKILLed mid-pass", inject, hold=hold)
        from tests.support.invariants import ready_undecided

        # The pass after the lapse left no card of those boards waiting undecided.
        left = db(lambda: ready_undecided(stand.suite.pipeline, killed["boards"], stand.suite.lock))
        outcome = self.outcomes[-1]
        lapse = killed.get("lapse")
        if lapse is None:
            note = "    no board of its was leased when it died"
        else:
            note = (
                f"    its {len(killed['boards'])} boards read again from {lapse:.1f} s after "
                f"the kill (their lease had {killed['lease_left_s']:.1f} s left; "
                f"{len(killed['early'])} read sooner), {len(killed['unread'])} never; "
                f"{len(left)} of their ready cards undecided after"
            )
        print(note, flush=True)
        if lapse is None or killed["unread"] or killed["early"] or left:
            outcome.survived = False
            outcome.line = outcome.line.replace(": survived;", ": NOT SURVIVED;")

    def postgres_restarted(self) -> None:
        stand = self.stand

        def inject() -> str:
            stand.store_down_since, stand.store_down_until = time.monotonic(), None
            started = time.monotonic()
            subprocess.run(
                ["pg_ctlcluster", "--skip-systemctl-redirect", PG_VERSION, "main", "restart"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            wait_until(
                lambda: subprocess.run(["pg_isready", "-h", "127.0.0.1", "-q"]).returncode == 0,
                30,
                "PostgreSQL answering again",
                every=0.1,
            )
            stand.store_down_until = time.monotonic() + 1.0  # connections being made again
            return f"; down {time.monotonic() - started:.1f} s"

        self.run("PostgreSQL restarted", inject)

    def redis_restarted(self) -> None:
        def inject() -> str:
            started = time.monotonic()
            subprocess.run(
                ["redis-cli", "-h", "127.0.0.1", "shutdown", "nosave"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.0)  # an outage, not a blink
            subprocess.run(REDIS_START, check=True, stdout=subprocess.DEVNULL)
            wait_until(
                lambda: (
                    subprocess.run(["redis-cli", "-h", "127.0.0.1", "ping"], capture_output=True).returncode
                    == 0
                ),
                30,
                "Redis answering again",
                every=0.1,
            )
            return f"; down {time.monotonic() - started:.1f} s"

        self.run("Redis restarted", inject)

    def two_sweeps(self) -> None:
        from superdispatch.celery import app

        def inject() -> str:
            app.send_task("superdispatch.sweep")
            app.send_task("superdispatch.sweep")
            return "; two more sweeps sent"

        def hold() -> None:
            time.sleep(SWEEP_S)

        self.run("two sweeps at once", inject, hold=hold)

    def relay_storm(self) -> None:
        stand, suite = self.stand, self.stand.suite
        url = stand.base + "/v1/relay/events"
        sent_at: dict[str, float] = {}
        storm: dict = {}
        local = threading.local()

        def post(delivery) -> None:
            session = getattr(local, "session", None) or requests.Session()
            local.session = session
            sent_at.setdefault(delivery.event["cardId"], time.time())
            try:
                answer = session.post(
                    url, data=delivery.body, timeout=(2, 10), headers=signed_headers(suite, delivery)
                )
            except requests.RequestException:
                stand.ledger.note(delivery.delivery_id, delivery.body, None, None, now())
                return
            stand.ledger.note(delivery.delivery_id, delivery.body, answer.status_code, answer.content, now())

        def inject() -> str:
            started = time.monotonic()
            cards, every = [], STORM_S / STORM_CARDS
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                for n in range(STORM_CARDS):
                    time.sleep(max(0.0, started + n * every - time.monotonic()))
                    with suite.lock:
                        suite.pipeline.add_card(STORM_BOARDS[n % len(STORM_BOARDS)])
                        delivery = suite.relay.deliveries[-1]
                    cards.append(delivery)
                    pool.submit(post, delivery)
                    if n % 9 == 8:  # 100 of the 1,000: a delivery again, under its id, the
                        # one just sent (its first copy may be in flight still) or an older one
                        pool.submit(post, cards[n - 1] if n // 9 % 2 else cards[n - 8])
            storm.update(cards=cards, posted_s=time.monotonic() - started)
            return f"; {STORM_CARDS + STORM_REDELIVERED} deliveries posted in {storm['posted_s']:.1f} s"

        def hold() -> None:
            # Until each delivery's pass has run: its card placed, or its row says why not.
            from records.models import Decision, RelayDelivery

            ids = [d.delivery_id for d in storm["cards"]]
            cards = [d.event["cardId"] for d in storm["cards"]]

            def drained() -> bool:
                said = RelayDelivery.objects.filter(pk__in=ids).exclude(outcome="").count()
                if said < len(ids):  # a sweep may have placed the rest
                    decided = set(
                        Decision.objects.filter(card_id__in=cards).values_list("card_id", flat=True)
                    )
                    return said + sum(1 for c, d in zip(cards, ids) if c in decided) >= len(ids)
                return True

            storm["drained_s"] = waited(lambda: db(drained), 180, every=0.5)

        self.run("relay storm", inject, hold=hold)
        from records.models import RelayDelivery

        ids = {d.delivery_id for d in storm["cards"]}
        outcomes: dict[str, int] = {}
        for outcome in db(
            lambda: list(RelayDelivery.objects.filter(pk__in=list(ids)).values_list("outcome", flat=True))
        ):
            outcomes[outcome or "none yet"] = outcomes.get(outcome or "none yet", 0) + 1
        with suite.lock:
            held = {}
            for grant in suite.pipeline.holds_granted:
                if grant.card_id in sent_at:
                    held.setdefault(grant.card_id, grant)
        latency = [(held[c].at.timestamp() - sent) * 1000 for c, sent in sent_at.items() if c in held]
        answers = [a for a in stand.ledger.answers if a.delivery_id in ids]
        drained = storm.get("drained_s")
        print(
            f"    storm: {sum(1 for a in answers if a.status == 202)} taken, "
            f"{sum(1 for a in answers if (a.body or {}).get('duplicate'))} answered duplicate; "
            "their passes: "
            + ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))
            + (
                f", the last {drained:.1f} s after the storm"
                if drained is not None
                else ", not all within 180 s"
            )
            + (
                f"; {len(held)} held, delivery to hold p50 {percentile(latency, 50):.0f} ms, "
                f"p99 {percentile(latency, 99):.0f} ms"
                if latency
                else ""
            ),
            flush=True,
        )
        with suite.lock:  # the storm's cards leave, so the faults after it weigh no backlog
            for delivery in storm["cards"]:
                suite.pipeline.archive_card(delivery.event["cardId"])


# --- Runs ------------------------------------------------------------------------------------

FAULT_NAMES = [f"{p}-{f}" for p in PRODUCTS for f in FAULTS] + [
    "sigkill",
    "two-sweeps",
    "storm",
    "redis",
    "postgres",
]


def run_faults(only: list[str], database: str, redis_url: str) -> None:
    settings = {
        "SUPERDISPATCH_SWEEP_SECONDS": str(SWEEP_S),
        "SUPERDISPATCH_SWEEP_SHARD_BOARDS": str(SHARD_BOARDS),
        "SUPERDISPATCH_LEASE_SECONDS": str(LEASE_S),
        "SUPERDISPATCH_POLICY": "on",
    }
    workers = [("sweeps1", "celery", 1), ("sweeps2", "celery", 1), ("placement", "placement", 2)]
    stand = Stand(fault_scenario(), settings, database, redis_url, workers)
    print(
        f"faults: {len(BOARDS)} boards with agents at work, {len(STORM_BOARDS)} storm boards; "
        f"sweep every {SWEEP_S} s in shards of {SHARD_BOARDS}, leases {LEASE_S} s; "
        "web, 2 sweeps workers, a placement worker, beat; PostgreSQL and Redis",
        flush=True,
    )
    try:
        stand.start()
        time.sleep(SWEEP_S * 2)  # a couple of ordinary sweeps first
        faults = Faults(stand)
        for name in only:
            if name == "sigkill":
                faults.worker_killed()
            elif name == "two-sweeps":
                faults.two_sweeps()
            elif name == "storm":
                faults.relay_storm()
            elif name == "redis":
                faults.redis_restarted()
            elif name == "postgres":
                faults.postgres_restarted()
            else:
                product, fault = name.split("-", 1)
                faults.product(product, fault)
        last = now()
        waited(lambda: clean_sweep_after(last), RECOVER_S, every=0.2)
        waited(lambda: not stand.check(last).lost_events, RESENT_S, every=2.0)
        found = stand.check(last)
        print(f"after every fault: {found.line()}; processes' log {stand.log.name}", flush=True)
        lost = set(found.lost_events)
        for answer in [a for a in stand.ledger.answers if a.delivery_id in lost][:5]:
            print(
                f"    lost: {answer.delivery_id} {answer.event.get('type')} "
                f"{answer.event.get('boardId')} {answer.event.get('cardId')}, answered "
                f"{answer.status} at {answer.at.isoformat()}; "
                f"{story(answer.delivery_id, answer.event.get('cardId'))}",
                flush=True,
            )
        survived = sum(1 for o in faults.outcomes if o.survived)
        last_line(
            f"faults={len(faults.outcomes)} survived={survived} "
            f"double_holds={len(found.double_holds)} "
            f"orphan_decisions={len(found.orphan_decisions)} "
            f"lost_events={len(found.lost_events)}"
        )
    finally:
        stand.stop()


def run_soak(seconds: int, database: str, redis_url: str) -> None:
    with open(os.path.join(ROOT, "sandbox", "scenarios", "demo.json")) as f:
        demo = json.load(f)
    settings = {
        "SUPERDISPATCH_SWEEP_SECONDS": "10",
        "SUPERDISPATCH_POLICY": "on",
        "SUPERDISPATCH_CANDIDATES": "all",
    }
    workers = [("worker", "celery", 2), ("placer", "placement", 2)]  # as Procfile.demo runs them
    stand = Stand(demo, settings, database, redis_url, workers, receiver=True)
    print(
        f"soak: the demo's scenario for {seconds} s on the wall clock; web, a sweeps worker and "
        "a placement worker (2 processes each), beat and the relay; PostgreSQL and Redis",
        flush=True,
    )
    try:
        stand.start()
        rss_first: dict[str, float] = {}
        started = time.monotonic()
        with stand.watch() as health:
            while time.monotonic() - started < seconds:
                time.sleep(min(60.0, seconds - (time.monotonic() - started)))
                elapsed = time.monotonic() - started
                rss = stand.rss_mb()
                rss_first = rss_first or rss  # after the first minute (or all of a shorter soak)
                print(
                    f"  {elapsed:.0f} s: {stand.check().line()}; RSS "
                    f"{', '.join(f'{name} {mb:.0f}' for name, mb in rss.items())} MB",
                    flush=True,
                )
            stand.driver.stop()
            stand.suite.relay.flush()
            settled_at = now()
            waited(lambda: clean_sweep_after(settled_at) or _one_board_swept(settled_at), 60, 0.5)
            waited(lambda: not stand.check(settled_at).lost_events, 30, every=1.0)
        rss_end = stand.rss_mb()
        found = stand.check(settled_at)
        failed = stand.ledger.failures()
        sim = stand.driver.simulation.metrics.summary()
        claims = sim["claims"]
        tally = health.tally
        # Sent and never taken (the events of the first cards, before the relay was pointed
        # at the webhook, were never sent: the opt-in's look placed those cards).
        undelivered = sum(1 for d in stand.suite.relay.deliveries if d.statuses and not d.delivered)
        print(f"  at the end: {found.line()}", flush=True)
        print(
            f"  agents: {claims['count']} claims, "
            f"{(claims['reservedShare'] or 0):.0%} under a hold; runs {sim['runs']}; "
            f"{sim['noShows']} no-shows; events out: {stand.receiver.receiver.summary()}",
            flush=True,
        )
        print(
            f"  relay: {len(stand.ledger.answers)} deliveries posted, "
            f"{len(stand.ledger.taken())} taken, {stand.ledger.unavailable()} answered 503, "
            f"{len(failed)} failed, {undelivered} never delivered; /healthz {tally.asked} "
            f"asked, {tally.ok} ok, {tally.failed} failed",
            flush=True,
        )
        growth = rss_growth(rss_first, rss_end)
        print(
            "  memory (RSS, each process with its children): "
            + "; ".join(
                f"{name} {rss_first[name]:.0f} MB after the first minute, {rss_end[name]:.0f} MB at "
                f"the end ({growth[name]:+.1f}%)"
                for name in rss_first
            ),
            flush=True,
        )
        survived = int(found.ok and tally.failed == 0 and not failed and undelivered == 0)
        last_line(
            f"soak_s={seconds} survived={survived} double_holds={len(found.double_holds)} "
            f"orphan_decisions={len(found.orphan_decisions)} "
            f"lost_events={len(found.lost_events)} "
            f"rss_growth_pct={max(growth.values(), default=0.0):.1f}",
            variant="soak",
        )
    finally:
        stand.stop()


def rss_growth(first: dict[str, float], end: dict[str, float]) -> dict[str, float]:
    """Each process's growth from its RSS after the first minute to its RSS at the end, in %."""
    return {name: (end.get(name, 0.0) - mb) / mb * 100 if mb else 0.0 for name, mb in first.items()}


def _one_board_swept(moment: datetime) -> bool:
    """Fewer boards than a shard: the sweep runs in one task; a read after `moment` says it ran."""
    from records.models import LoopState

    return db(lambda: LoopState.objects.filter(last_sweep_at__gt=moment).exists())


def main() -> None:
    # Stopped from outside (even from a shell that started it in the background, where SIGINT
    # is ignored): end the service's processes and drop the bench's database on the way out.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soak", type=int, metavar="SECONDS")
    parser.add_argument("--only", help="comma-separated, of: " + ", ".join(FAULT_NAMES))
    parser.add_argument("--database", default=DATABASE)
    parser.add_argument("--redis", default=REDIS_URL)
    args = parser.parse_args()
    if args.soak is not None:
        if args.soak < 1:
            parser.error("--soak takes a number of seconds, at least 1")
        run_soak(args.soak, args.database, args.redis)
        return
    only = args.only.split(",") if args.only else FAULT_NAMES
    unknown = sorted(set(only) - set(FAULT_NAMES))
    if unknown:
        parser.error(f"no such fault: {', '.join(unknown)}")
    run_faults(only, args.database, args.redis)


if __name__ == "__main__":
    main()
