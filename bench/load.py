"""A team's load against `make run`'s own processes on PostgreSQL and Redis, and what it keeps.

`make run`'s processes, started as it starts them (`honcho -f Procfile start`: the web server,
`worker -Q celery`, the placement worker and beat), on a fresh PostgreSQL database and a Redis
database of the bench's own, the sweep every 30 s (the default). The products are the stand-in
suite over HTTP on 127.0.0.1 (`SandboxServers`, in this process, on the wall clock), bench/
scale.py's fleet: BOARDS boards opted in and swept (one ready card each to start), WRITE_BOARDS
more that the writers opt in and out, each rostering ROSTER of AGENTS agents (an agent is on
ten boards). A held card is claimed and finished at once by this process, as pull would, and
its hold settled at the next read of its board (a relayed card's pass, or the sweep).

For `--seconds` (120 by default), all at once, over loopback only:
- `--clients` API clients (50), each waiting 1 to 3 s between calls (about 25 calls a second in
  all), with the named tokens a team would make (docs/access.md): four in five `team-reader`
  (`read`: the boards, a board, decisions, a board's decisions, suggestions), one in ten `triage`
  (`read`, `suggestions`: the open suggestions, a decision), one in ten `board-bot` (`read`,
  `boards`: opting its own two boards in and out, each in turn, then reading it back);
- `--rate` relay deliveries a second (20): a card added to a swept board in turn and its
  `card.ready` posted signed as the relay signs it (16 at a time at most); its figure is from
  the card's being added (when the relay would send it) to the stand-in receiving its hold (a
  card with no hold within 10 s counts as 10 s);
- `/healthz` asked four times a second on a connection of its own;
- `--slow` slow clients (16), half sending a header line a byte every 5 s, half a body short
  of its length, each opening again when the server closes it.

Figures: p50 and p99 of `/healthz`, of the reads and of the writes; relay card.ready to hold,
and where its time went (the webhook's answer to the start of the card's first pass, its
decision's time, and that start to the hold);
each sweep's start (`LoopState.last_sweep_at`, looked at every 0.25 s) against its time, one
interval after the start before it (`sweep_late_max_s`, the most any was late; a sweep skipped
counts as an interval late); every answer of 500 or more; and writes lost: a board whose state
in the store is not the one its writer was last told, each opt-in or opt-out the writer was
told of without its one audit entry (or an entry without one), and each delivery answered 202
without its row in the store.

Goals: /healthz and reads p99 under 250 ms, relay p99 under 250 ms, every sweep within 2 s of
its time, no 5xx, no write lost.

Run: .venv/bin/python bench/load.py [--seconds 120] [--clients 50] [--rate 20] [--slow 16]
     [--database superdispatch_bench_load]      (BENCH_POSTGRES_URL, BENCH_REDIS_URL as for the others)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

import msgspec

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import _common  # noqa: E402
from bench._common import (  # noqa: E402
    PYTHON,
    REDIS_DB_URL,
    ROOT,
    CpuShares,
    base_env,
    drop_database,
    free_port,
    fresh_database,
    percentile,
    signed_headers,
    start_make_run,
    stop_make_run,
    temp_dir,
)
from bench._fleet import RELAY_BOARD, scenario  # noqa: E402
from bench._results import last_line  # noqa: E402
from sandbox import SandboxServers, Suite  # noqa: E402
from sandbox.clock import system_clock  # noqa: E402
from sandbox.scenario import parse_scenario  # noqa: E402

BOARDS, WRITE_BOARDS, AGENTS, ROSTER = 100, 10, 1000, 100
SWEEP_S = 30
HOLD_TIMEOUT_S = 10.0  # the placement window: a hold later than this is a miss
OPERATOR_TOKEN = "bench-operator-token"
TOKENS = {"team-reader": ["read"], "triage": ["read", "suggestions"], "board-bot": ["read", "boards"]}
REQUEST_TIMEOUT_S = 30


class _Decision(msgspec.Struct):
    id: str


class _Page(msgspec.Struct):
    decisions: list[_Decision] = []


# A page's decision ids, the rest of its 5 MB skipped unread: this process serves the stand-in
# suite on the same cores, and parsing every page whole (`json.loads`) held its interpreter
# for some 50 ms a page, the stand-in's answers to the placement workers waiting meanwhile.
read_ids = msgspec.json.Decoder(_Page).decode


def wait_until(ready, timeout: float, what: str, every: float = 0.1) -> None:
    _common.wait_until(ready, timeout, what, every, "load")


class Tally:
    """Every answer's time and status, by kind; shared by the threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ms: dict[str, list[float]] = defaultdict(list)
        self.status: Counter = Counter()
        self.server_errors: Counter = Counter()
        self.failed: Counter = Counter()  # no answer: refused, reset or timed out
        self.failures: list[str] = []

    def ask(self, http, kind: str, method: str, url: str, route: str = "", **kwargs):
        started = time.monotonic()
        try:
            response = http.request(method, url, timeout=REQUEST_TIMEOUT_S, **kwargs)
        except Exception as err:  # noqa: BLE001  counted, never raised: the load goes on
            with self.lock:
                self.failed[f"{kind}: {type(err).__name__}"] += 1
                self.failures.append(f"{method} {url}: {str(err)[:200]}")
            return None
        took = (time.monotonic() - started) * 1000
        with self.lock:
            self.ms[kind].append(took)
            if route:
                self.ms[f"{kind} {route}"].append(took)
            self.status[response.status_code] += 1
            if response.status_code >= 500:
                self.server_errors[
                    f"{method} {url.split('?')[0].rsplit('/v1', 1)[-1]} {response.status_code}"
                ] += 1
        return response


class Holds:
    """Wraps the stand-in's reserve: when each card's first hold arrives; every hold is then
    claimed and finished by `free`, as pull would, so its agent works again."""

    def __init__(self, suite) -> None:
        self.suite = suite
        self.first: dict[str, float] = {}
        self.first_wall: dict[str, float] = {}  # the same moment on the wall clock
        self.to_free: list[tuple[str, str]] = []
        self.changed = threading.Condition()
        self._reserve = suite.pipeline.reserve
        suite.pipeline.reserve = self.reserve

    def reserve(self, board_id, card_id, agent_id, seconds):
        with self.changed:
            self.first.setdefault(card_id, time.monotonic())
            self.first_wall.setdefault(card_id, time.time())
            self.to_free.append((agent_id, card_id))
            self.changed.notify_all()
        return self._reserve(board_id, card_id, agent_id, seconds)

    def free(self, done: threading.Event) -> None:
        while not done.is_set():
            with self.changed:
                self.changed.wait_for(lambda: self.to_free or done.is_set(), 1)
                held, self.to_free = self.to_free, []
            for agent_id, card_id in held:
                with self.suite.lock:
                    try:
                        self.suite.pipeline.claim(agent_id, card_id)
                        self.suite.pipeline.finish(agent_id, card_id, True)
                    except Exception:  # noqa: BLE001  claimed meanwhile by a later hold's agent
                        pass


def processes(honcho_pid: int) -> dict[str, int]:
    """The pid of each of honcho's processes, by its Procfile name, for their CPU: honcho forks
    a process of its own for each, which starts the Procfile's line in a shell."""
    names = {
        "manage.py serve": "web",
        "-Q celery": "worker",
        "-Q placement": "placer",
        "superdispatch beat": "beat",
    }
    parents = {
        int(e): stat[1]
        for e in os.listdir("/proc")
        if e.isdigit() and (stat := _common.proc_stat(int(e))) is not None
    }
    found = {}
    for pid, parent in parents.items():
        if parents.get(parent) != honcho_pid:  # a grandchild: the shell running the line
            continue
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        for needle, name in names.items():
            if needle in cmdline:
                found[name] = pid
    return found


def make_token(env: dict, name: str, scopes: list[str]) -> str:
    args = [PYTHON, "manage.py", "tokens", "create", name]
    for scope in scopes:
        args += ["--scope", scope]
    out = subprocess.run(args, env=env, cwd=ROOT, check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1].removeprefix("token=")


def slow_client(port: int, start: bytes, done: threading.Event, opened: Counter) -> None:
    """One connection at a time, fed a byte every 5 s; opened again when the server closes it."""
    while not done.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                opened["slow"] += 1
                sock.sendall(start)
                while not done.wait(5):
                    sock.sendall(b"x")
                    sock.settimeout(0.01)
                    try:
                        if sock.recv(4096) == b"":
                            break  # closed by the server
                    except (socket.timeout, BlockingIOError):
                        pass
        except OSError:
            done.wait(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rate", type=float, default=20)
    parser.add_argument("--slow", type=int, default=16)
    parser.add_argument("--database", default="superdispatch_bench_load")
    args = parser.parse_args()
    import requests

    suite = Suite.from_scenario(
        parse_scenario(scenario(BOARDS + WRITE_BOARDS, AGENTS, ROSTER, 1)), system_clock
    )
    board_ids = [board.id for board in suite.scenario.boards if board.id != RELAY_BOARD]
    swept, written = board_ids[:BOARDS], board_ids[BOARDS:]
    holds = Holds(suite)
    servers = SandboxServers(suite)
    servers.start()
    data_dir = temp_dir("load")
    port = free_port()
    env = base_env(
        suite.dispatch_config().as_env(),
        data_dir,
        fresh_database("postgres", args.database, data_dir),
        REDIS_DB_URL,
    )
    env["PORT"] = str(port)
    env["SUPERDISPATCH_OPERATOR_TOKEN_SHA256"] = hashlib.sha256(OPERATOR_TOKEN.encode()).hexdigest()
    env["SUPERDISPATCH_SWEEP_SECONDS"] = str(SWEEP_S)
    os.environ.update(env)
    import redis

    redis.Redis.from_url(REDIS_DB_URL).flushdb()  # the bench's own database: no stale tasks
    subprocess.run([PYTHON, "manage.py", "migrate", "-v", "0"], env=env, check=True, cwd=ROOT)
    tokens = {name: make_token(env, name, scopes) for name, scopes in TOKENS.items()}
    honcho, log_path = start_make_run(env, data_dir, port)
    base = f"http://127.0.0.1:{port}"
    done = threading.Event()
    tally = Tally()
    try:
        import django

        django.setup()
        from django.db import connection
        from django.db.models import Min

        from access.models import AuditEntry
        from records.models import Board, Decision, LoopState, RelayDelivery

        def last_sweep():
            found = LoopState.objects.filter(pk="loop").values_list("last_sweep_at", flat=True).first()
            connection.close()
            return found

        setup = requests.Session()
        wait_until(lambda: _common.answers(setup, base, "/healthz"), 120, "the web app starting")
        bot = {"Authorization": f"Bearer {tokens['board-bot']}"}
        _common.opt_in(setup, base, bot, swept, suite, 180, every=0.1, bench="load")
        wait_until(lambda: last_sweep() is not None, 4 * SWEEP_S, "a first sweep")
        print(
            f"set up: {BOARDS} boards swept, {WRITE_BOARDS} written, {AGENTS} agents, "
            f"{ROSTER} on each roster; "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
            flush=True,
        )

        # --- the clients ------------------------------------------------------------------
        # Each write's answer: the state it told (None: no such board), or "unknown" (none came).
        told: dict[str, list] = {b: [] for b in written}

        def reader(n: int, token: str, kinds: list[str]) -> None:
            http = requests.Session()
            auth = {"Authorization": f"Bearer {token}"}
            rng = random.Random(n)
            seen: list[str] = []
            while not done.wait(rng.uniform(1, 3)):
                kind = rng.choice(kinds)
                board = rng.choice(swept)
                url = {
                    "boards": "/v1/boards",
                    "board": f"/v1/boards/{board}",
                    "decisions": "/v1/decisions?limit=20",
                    "board-decisions": f"/v1/decisions?board={board}&limit=20",
                    "suggestions": "/v1/suggestions",
                    "decision": f"/v1/decisions/{seen[-1]}" if seen else "/v1/decisions?limit=1",
                }[kind]
                answer = tally.ask(http, "read", "GET", base + url, route=kind, headers=auth)
                if answer is not None and answer.status_code == 200 and "decisions" in url:
                    seen[:] = [d.id for d in read_ids(answer.content).decisions[:5]] or seen

        def writer(n: int, token: str, mine: list[str]) -> None:
            http = requests.Session()
            auth = {"Authorization": f"Bearer {token}"}
            rng = random.Random(1000 + n)
            turn = 0
            while not done.wait(rng.uniform(1, 3)):
                board = mine[turn % len(mine)]
                turn += 1
                if turn % 3 == 0:  # a read back of its own board
                    tally.ask(http, "read", "GET", f"{base}/v1/boards/{board}", headers=auth)
                    continue
                method = rng.choice(["PUT", "DELETE"])
                answer = tally.ask(http, "write", method, f"{base}/v1/boards/{board}", headers=auth)
                if answer is None:
                    told[board].append("unknown")  # not told: the store may hold either
                elif answer.status_code == 200:
                    told[board].append(answer.json()["board"]["enabled"])
                elif answer.status_code == 404 and method == "DELETE":
                    told[board].append(None)

        def healthz() -> None:
            http = requests.Session()
            while not done.wait(0.25):
                tally.ask(http, "healthz", "GET", base + "/healthz")

        sent: dict[str, tuple[str, float, int]] = {}  # delivery id: card, ready at, status
        answered_wall: dict[str, float] = {}  # card: when the webhook answered, wall clock
        scheduled = [0]  # cards made ready, each with its delivery due
        relay_http = threading.local()

        def deliver(card_id: str, delivery, at: float) -> None:
            http = getattr(relay_http, "session", None) or requests.Session()
            relay_http.session = http
            headers = signed_headers(suite, delivery)
            answer = tally.ask(
                http, "relay", "POST", base + "/v1/relay/events", data=delivery.body, headers=headers
            )
            answered_wall[card_id] = time.time()
            sent[delivery.delivery_id] = (card_id, at, answer.status_code if answer else 0)

        def relay(pool: ThreadPoolExecutor, started: float) -> None:
            n = 0
            while not done.is_set():
                due = started + n / args.rate
                if done.wait(max(0.0, due - time.monotonic())):
                    break
                with suite.lock:
                    card = suite.pipeline.add_card(swept[n % len(swept)])
                    delivery = suite.relay.deliveries[-1]
                    ready_at = time.monotonic()  # the card's ready moment: the relay sends now
                assert delivery.event["type"] == "card.ready" and delivery.event["cardId"] == card.id
                pool.submit(deliver, card.id, delivery, ready_at)
                n += 1
                scheduled[0] = n

        sweeps: list = [last_sweep()]

        def watch_sweeps() -> None:
            while not done.wait(0.25):
                seen = last_sweep()
                if seen != sweeps[-1]:
                    sweeps.append(seen)

        readers = int(args.clients * 0.8)
        writers = max(1, args.clients // 10)
        triagers = args.clients - readers - writers
        threads = [
            threading.Thread(
                target=reader,
                args=(
                    n,
                    tokens["team-reader"],
                    ["boards", "board", "decisions", "board-decisions", "suggestions"],
                ),
            )
            for n in range(readers)
        ]
        threads += [
            threading.Thread(target=reader, args=(readers + n, tokens["triage"], ["suggestions", "decision"]))
            for n in range(triagers)
        ]
        threads += [
            threading.Thread(
                target=writer,
                args=(n, tokens["board-bot"], written[2 * n % len(written) :][:2] or written[:2]),
            )
            for n in range(writers)
        ]
        opened: Counter = Counter()
        starts = [
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
            b"POST /v1/relay/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{",
        ]
        threads += [
            threading.Thread(target=slow_client, args=(port, starts[n % 2], done, opened))
            for n in range(args.slow)
        ]
        threads += [
            threading.Thread(target=healthz),
            threading.Thread(target=watch_sweeps),
            threading.Thread(target=holds.free, args=(done,)),
        ]
        senders = ThreadPoolExecutor(16)
        cpu = CpuShares({**processes(honcho.pid), "bench": os.getpid()}, servers=("postgres", "redis-server"))
        cpu.start()
        load_before = os.getloadavg()
        started = time.monotonic()
        threads.append(threading.Thread(target=relay, args=(senders, started)))
        for thread in threads:
            thread.daemon = True
            thread.start()
        time.sleep(args.seconds)  # the run's length, not a wait on anything
        done.set()
        load_after = os.getloadavg()
        ran_s = time.monotonic() - started
        cpu_s = cpu.stop()
        # Deliveries still waiting for a sender when the run ends are never sent: counted below.
        senders.shutdown(wait=True, cancel_futures=True)
        for thread in threads:
            thread.join(timeout=REQUEST_TIMEOUT_S + 5)

        # --- what it kept ------------------------------------------------------------------
        with holds.changed:
            holds.changed.wait_for(
                lambda: all(c in holds.first for c, _, s in sent.values() if s == 202), HOLD_TIMEOUT_S
            )
        relay_ms = []
        missed = 0
        for card_id, at, status in sent.values():
            if status != 202:
                continue
            held = holds.first.get(card_id)
            if held is None or held - at > HOLD_TIMEOUT_S:
                missed += 1
                relay_ms.append(HOLD_TIMEOUT_S * 1000)
            else:
                relay_ms.append((held - at) * 1000)
        accepted = [d for d, (_, _, status) in sent.items() if status == 202]
        stored = set(
            RelayDelivery.objects.filter(delivery_id__in=accepted).values_list("delivery_id", flat=True)
        )
        lost_deliveries = len(accepted) - len(stored)
        outcomes = Counter(
            RelayDelivery.objects.filter(delivery_id__in=accepted).values_list("outcome", flat=True)
        )
        # Where a relayed card's time went: the webhook's answer, then the wait until a pass
        # began (its decision's time is the pass's start), then the pass to the hold.
        relayed = [card for card, _, status in sent.values() if status == 202]
        decided = dict(
            Decision.objects.filter(card_id__in=relayed)
            .values("card_id")
            .annotate(first=Min("created_at"))
            .values_list("card_id", "first")
        )
        waited_ms, passed_ms = [], []
        for card in relayed:
            if card in decided and card in holds.first_wall and card in answered_wall:
                began = decided[card].timestamp()
                waited_ms.append((began - answered_wall[card]) * 1000)
                passed_ms.append((holds.first_wall[card] - began) * 1000)
        lost_states = lost_entries = 0
        for board_id, states in told.items():
            known = [s for s in states if s != "unknown"]
            row = Board.objects.filter(board_id=board_id).values_list("enabled", flat=True).first()
            # One writer to a board, one write at a time: the last answer is the board's state.
            if states and states[-1] != "unknown" and row != states[-1]:
                lost_states += 1
            changes = sum(
                1 for before, after in zip([None] + known, known) if after is not None and before != after
            )
            entries = AuditEntry.objects.filter(
                target=board_id, action__in=["board.opt-in", "board.opt-out"]
            ).count()
            if "unknown" not in states:
                lost_entries += abs(entries - changes)
        connection.close()
        starts_s = [s.timestamp() for s in sweeps if s is not None]
        gaps = [b - a for a, b in zip(starts_s, starts_s[1:])]
        late = [max(0.0, gap - SWEEP_S) for gap in gaps]
    finally:
        done.set()
        stop_make_run(honcho)
        servers.stop()
        drop_database("postgres", args.database)

    def p(kind: str, q: float) -> float:
        return percentile(tally.ms[kind], q)

    print(
        f"ran {ran_s:.0f} s: {args.clients} clients ({readers} team-reader, {triagers} triage, "
        f"{writers} board-bot), relay at {args.rate:g}/s, {args.slow} slow clients "
        f"({opened['slow']} connections opened); load average "
        f"{' '.join(f'{x:.2f}' for x in load_before)} at the start, "
        f"{' '.join(f'{x:.2f}' for x in load_after)} at the end"
    )
    for kind in ("healthz", "read", "write", "relay"):
        print(
            f"  {kind:>8}: {len(tally.ms[kind])} answers, p50 {p(kind, 50):.0f} ms, "
            f"p99 {p(kind, 99):.0f} ms, max {max(tally.ms[kind], default=0):.0f} ms"
        )
    routes = sorted(k for k in tally.ms if k.startswith("read "))
    print(
        "  reads by route: "
        + ", ".join(f"{k[5:]} {len(tally.ms[k])} p50 {p(k, 50):.0f} ms p99 {p(k, 99):.0f} ms" for k in routes)
    )
    print(
        f"  relay: {scheduled[0]} card.ready due, {len(sent)} sent (the rest waited for one "
        f"of the 16 senders past the run's end)"
    )
    print(
        f"  relay card.ready to hold: {len(relay_ms)} delivered, p50 "
        f"{percentile(relay_ms, 50):.0f} ms, p99 {percentile(relay_ms, 99):.0f} ms, "
        f"{missed} with no hold within {HOLD_TIMEOUT_S:.0f} s"
    )
    print(
        f"  of the {len(waited_ms)} held after a decision: from the webhook's answer to their "
        f"pass's start p50 {percentile(waited_ms, 50):.0f} ms, p99 {percentile(waited_ms, 99):.0f} "
        f"ms; from its start to the hold p50 {percentile(passed_ms, 50):.0f} ms, p99 "
        f"{percentile(passed_ms, 99):.0f} ms"
    )
    print(
        f"  the relayed cards' outcomes: "
        f"{', '.join(f'{k or chr(45)} {v}' for k, v in sorted(outcomes.items()))}"
    )
    print(
        f"  CPU seconds over the run (of {2 * ran_s:.0f} two cores give; the machine is shared): "
        f"{', '.join(f'{k} {v:.0f}' for k, v in sorted(cpu_s.items(), key=lambda kv: -kv[1]))}"
    )
    print(
        f"  sweeps: {len(gaps)} intervals seen, each start after the one before "
        f"{', '.join(f'{g:.1f}' for g in gaps)} s (interval {SWEEP_S} s)"
    )
    print(
        f"  answers by status: {dict(sorted(tally.status.items()))}; 5xx: "
        f"{dict(tally.server_errors) or 'none'}; no answer: {dict(tally.failed) or 'none'}"
    )
    print(
        f"  writes lost: {lost_states} boards not in the state last told, {lost_entries} "
        f"opt-ins and opt-outs without their one audit entry, {lost_deliveries} accepted "
        f"deliveries not stored; the processes' log: {log_path}"
    )
    for failure in tally.failures[:5]:
        print(f"  no answer: {failure}")
    late_max = max(late, default=float("nan"))
    last_line(
        f"healthz_p99_ms={p('healthz', 99):.0f} read_p99_ms={p('read', 99):.0f} "
        f"relay_p99_ms={percentile(relay_ms, 99):.0f} sweep_late_max_s={late_max:.1f} "
        f"errors_5xx={sum(tally.server_errors.values())} "
        f"lost_writes={lost_states + lost_entries + lost_deliveries}"
    )


if __name__ == "__main__":
    main()
