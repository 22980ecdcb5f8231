"""Time a relayed card's pass as the store's live holds, and its board's history, grow.

A relayed card.ready is placed alone (`place_one`): one board's read, its settling, its cards'
ladders, the holds its filters read, the card's eligibility read of every workspace agent,
the decision and its record, and the hold. This times that pass on bench/scale.py's
workspace (10,000 agents, 100 on each board's roster) at 20 boards, with H live holds of other
cards already in the store: what a sweep under way has held by the time the card comes
(bench/scale.py's full size holds 5,000 in one sweep; ten times its boards, 50,000), and then
with none live but S holds settled on the relay board itself, claimed or lapsed, spread over
its agents: a busy board's history (1,100 holds a day for the 90 days kept by default). Nothing
else runs, so the figures move little from run to run.

Each run runs in a fresh process on a fresh PostgreSQL database, with the stand-in suite in
process (`sandbox_session`, no sockets) on a clock that stands still. Each pass places a new
card on the relay board, whose held agent then claims and finishes it, as pull would. Printed:
each run's mean wall time and process CPU time a pass, and the store's queries a pass.

Run: .venv/bin/python bench/relay_pass.py [passes]      (default 100 each, after 20 warm-up)
Last line: relay_pass_ms_h0=… relay_pass_ms_h5000=… relay_pass_ms_h50000=…
           relay_pass_ms_settled100000=…
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import count_arg, held_decision  # noqa: E402
from bench._fleet import RELAY_BOARD, WARMUP, scenario, time_relayed_passes  # noqa: E402
from bench._in_process import run_fresh, stand_up  # noqa: E402
from bench._results import last_line  # noqa: E402

BENCH_DB = "superdispatch_bench_relay_pass"
HOLDS = (0, 5000, 50000)  # live holds of other cards
SETTLED = 100_000  # holds settled on the relay board, in the last run
BOARDS, AGENTS, ROSTER = 20, 10000, 100


def run(holds: int, settled: int, passes: int) -> dict:
    """In a fresh process: the workspace, `holds` live holds and `settled` settled holds on the
    relay board, then `passes` relayed cards timed."""
    standing = stand_up(scenario(BOARDS, AGENTS, ROSTER, 0))
    suite, loop, now = standing.suite, standing.loop, standing.now
    # After stand_up (django.setup()): these need the app registry.
    import gc

    from records.models import Decision, HoldTally, OutcomeStatus
    from superdispatch.loop import look_at_board

    look_at_board(loop, RELAY_BOARD)  # caches its roster, as a sweep would
    # Live holds of the workspace's agents on other boards' cards, as a sweep makes them.
    Decision.objects.bulk_create(
        [
            held_decision(
                f"pld_{i:024x}",
                f"brd_{i % BOARDS:04d}",
                f"card_held_{i}",
                f"agt_{i % AGENTS:05d}",
                loop.rules.formula,
                now,
                roll_marks="",
            )
            for i in range(holds)
        ],
        batch_size=2000,
    )
    # The relay board's history, and its agents' tallies of it, as its settlements left them.
    agents = [f"agt_r{a:02d}" for a in range(20)]
    tallies = {agent: [0, 0] for agent in agents}
    history = []
    for i in range(settled):
        agent, claimed = agents[i % len(agents)], i % 5 != 0
        tallies[agent][0] += claimed
        tallies[agent][1] += 1
        at = now - timedelta(days=90) + timedelta(seconds=i * 77)
        history.append(
            held_decision(
                f"pld_{holds + i:024x}",
                RELAY_BOARD,
                f"card_past_{i}",
                agent,
                loop.rules.formula,
                at,
                roll_marks="",
                outcome_status=OutcomeStatus.CLAIMED if claimed else OutcomeStatus.EXPIRED,
                outcome_by=agent if claimed else None,
                outcome_at=at + timedelta(seconds=20),
            )
        )
    Decision.objects.bulk_create(history, batch_size=2000)
    if settled:
        HoldTally.objects.bulk_create(
            [
                HoldTally(board_id=RELAY_BOARD, agent_id=agent, claimed=claimed, settled=count)
                for agent, (claimed, count) in tallies.items()
            ]
        )
    del history
    gc.freeze()  # the stand-in's workspace lives as long as the run

    return time_relayed_passes(loop, suite, passes)


def main() -> None:
    if sys.argv[1:2] == ["--run"]:
        print(json.dumps(run(*(int(arg) for arg in sys.argv[2:5]))))
        return
    passes = count_arg(100)
    print(
        f"a relayed card's pass: {AGENTS} agents, {ROSTER} on each board's roster, "
        f"{passes} passes after {WARMUP} warm-up; PostgreSQL, the stand-in in process"
    )
    figures = {}
    for name, holds, settled in [*((f"h{h}", h, 0) for h in HOLDS), (f"settled{SETTLED}", 0, SETTLED)]:
        result = figures[name] = run_fresh(__file__, BENCH_DB, str(holds), str(settled), str(passes))
        print(
            f"  {holds:6} live holds, {settled:6} settled on the board: {result['wall_ms']:6.1f} ms "
            f"a pass ({result['cpu_ms']:5.1f} ms CPU), {result['queries']:.0f} queries"
        )
    last_line(" ".join(f"relay_pass_ms_{name}={figure['wall_ms']:.1f}" for name, figure in figures.items()))


if __name__ == "__main__":
    main()
