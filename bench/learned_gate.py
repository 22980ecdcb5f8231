"""What the loop's gate read costs under `SUPERDISPATCH_LEARNED=on` and
`SUPERDISPATCH_LEARNED_CREDIT=estimate`, at a shadow period of `decisions` decisions (10,000
by default): the read kept in the process (`learning.shadow_kept`) in its steady state, beside
the whole read and replay it stands in for.

The store is 20 boards of six agents, one shadow decision every 6 s between them (ten a
minute), each a winner hold for the best of four of its board's agents by stage record, with
every candidate's filters, score terms and stage record as the loop records them and the
model's choice among the four; most holds are claimed and run, some are claimed by another,
some lapse, the newest few are still open. The day before the period is the replay's look-back.

Timed, as this process's CPU (SQLite, the default, runs in it; with DATABASE_URL for
PostgreSQL, the server's own CPU is not counted): the first read (the whole period, read and
replayed once); a read with nothing new; a read after a minute's worth of new decisions, settled
(each of five minutes, the median); and the whole read and replay (`store.full_shadow_counts`),
whose answer the kept read's must equal.

Run: .venv/bin/python bench/learned_gate.py [decisions]
The last line: gate_read_ms (a read after a minute of new decisions, the median),
gate_read_idle_ms (nothing new), gate_first_read_ms, gate_full_replay_ms, shadow_decisions.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    ROOT,
    Batched,
    analyze,
    candidate_rows,
    configured_formula,
    count_arg,
    drop_database,
    held_decision,
    offline_store,
    settled_outcome,
)
from _results import last_line  # noqa: E402

sys.path.insert(0, ROOT)

BENCH_DB = "superdispatch_bench_learned_gate"
START = datetime(2026, 11, 14, 10, 0, tzinfo=timezone.utc)
BOARDS, AGENTS, IN_SET = 20, 6, 4
EVERY = timedelta(seconds=6)  # between two decisions: ten a minute
MINUTES = 5
SEED = 49


class Seeder:
    """The board's decisions, oldest first, as the loop would have recorded them."""

    def __init__(self, model) -> None:
        from placement.filtering import Tag, tables

        self.model, self.rng, self.n = model, random.Random(SEED), 0
        self.verdicts = [
            {"filter": f.name, "passed": True} for f in tables().in_order if Tag.STATION not in f.tags
        ]
        self.skill = {(b, a): 0.45 + 0.5 * self.rng.random() for b in range(BOARDS) for a in range(AGENTS)}

    def write(self, count: int, start: datetime, *, shadow: bool, now: datetime) -> datetime:
        """`count` decisions from `start`, settled as far as `now` shows; the next one's time."""
        rng = self.rng
        batched = Batched()
        made = start
        for _ in range(count):
            n, b = self.n, self.n % BOARDS
            self.n += 1
            agents = rng.sample(range(AGENTS), IN_SET)
            agents.sort(key=lambda a: -self.skill[b, a])
            chosen = f"agt_{b:03d}_{agents[0]}"
            claimed_after, run_s, luck = rng.uniform(2, 40), rng.uniform(60, 300), rng.random()
            runner_up, skill = f"agt_{b:03d}_{agents[1]}", self.skill[b, agents[0]]
            row = settled_outcome(rng, made, chosen, runner_up, skill, luck, claimed_after, run_s)
            if row["outcome_at"] > now:
                row = {}
            elif row.get("run_ended_at", now) > now:
                row = {**row, "run_status": None, "run_ended_at": None}
            learned = None
            if shadow:
                learned = {
                    "model": self.model.id,
                    "version": self.model.version,
                    "mode": "shadow",
                    "choice": f"agt_{b:03d}_{rng.choice(agents)}",
                    "formulaChoice": chosen,
                    "placed": False,
                    "probabilities": {},
                }
            decision = held_decision(
                f"pld_{n:08x}",
                f"brd_{b:03d}",
                f"card_{n}",
                chosen,
                configured_formula(),
                made,
                learned=learned,
                **row,
            )
            batched.add(decision, candidate_rows(decision, b, agents, self.skill, self.verdicts))
            made += EVERY
        batched.flush()
        return made


def cpu_ms(work) -> tuple[float, object]:
    began = time.process_time()
    out = work()
    return (time.process_time() - began) * 1000, out


def main() -> None:
    decisions = count_arg(10_000)
    _, kind = offline_store("learned_gate", BENCH_DB)
    import django

    django.setup()
    import dataclasses

    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from learning import runtime, store
    from learning.models import LearnedModel
    from placement.learned import FEATURES

    try:
        call_command("migrate", verbosity=0)
        n = len(FEATURES)
        model = LearnedModel.objects.create(
            version=1,
            created_at=START,
            seed=0,
            decisions=600,
            features=list(FEATURES),
            means=[0.0] * n,
            stds=[1.0] * n,
            weights=[1.0] + [0.0] * (n - 1),
            bias=0.0,
            iterations=500,
            learning_rate=0.5,
            l2=1e-4,
            metrics={"count": 1200, "auc": 0.8},
        )
        config = dataclasses.replace(
            settings.SUPERDISPATCH,
            learned="on",
            learned_credit="estimate",
            learned_min_rows=500,
            learned_min_shadow=100,
            learned_margin_pct=2,
        )
        seeder = Seeder(model)
        started = time.perf_counter()
        look_back = 24 * 60 * 60 // EVERY.seconds
        begin = START - EVERY * look_back
        now = START + EVERY * decisions
        seeder.write(look_back, begin, shadow=False, now=now)
        made = seeder.write(decisions, START, shadow=True, now=now)
        analyze()
        print(
            f"database={kind} shadow_decisions={decisions} look_back_decisions={look_back} "
            f"seed_s={time.perf_counter() - started:.1f}",
            flush=True,
        )

        first_ms, _ = cpu_ms(lambda: runtime.read(config))
        idle_ms = statistics.median(cpu_ms(lambda: runtime.read(config))[0] for _ in range(5))
        minute_ms, replayed = [], []
        for _ in range(MINUTES):
            now += timedelta(minutes=1)
            made = seeder.write(10, made, shadow=True, now=now)
            taken, reading = cpu_ms(lambda: runtime.read(config))
            minute_ms.append(taken)
            replayed.append(store.shadow_kept._kept.kept.replayed)
        kept = store.shadow_counts(model, config)
        full_ms, whole = cpu_ms(lambda: store.full_shadow_counts(model, config))
        assert kept == whole, "the kept read must answer as the whole replay does"
        assert reading.gate_passed == store.gate_reading(model, whole, config).passed
        print(
            f"first_read_ms={first_ms:.0f} idle_read_ms={idle_ms:.1f} "
            f"minute_reads_ms={','.join(f'{m:.0f}' for m in minute_ms)} "
            f"replayed_a_minute={','.join(map(str, replayed))} full_replay_ms={full_ms:.0f} "
            f"judged={whole['decisions']} gate_passed={reading.gate_passed} "
            f"load_average={os.getloadavg()[0]:.2f}",
            flush=True,
        )
    finally:
        connection.close()
        drop_database(kind, BENCH_DB)
    last_line(
        f"gate_read_ms={statistics.median(minute_ms):.1f} gate_read_idle_ms={idle_ms:.1f} "
        f"gate_first_read_ms={first_ms:.0f} gate_full_replay_ms={full_ms:.0f} "
        f"shadow_decisions={decisions}",
        database=kind,
    )


if __name__ == "__main__":
    main()
