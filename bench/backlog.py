"""What the backlog bound saves on a deep backlog: one board's passes, with it on and off.

One board with thousands of ready cards (5,000 by default; bench/scale.py has five a board),
100 agents on its roster out of a workspace of 10,000, every agent able to work every board
(so SuperPipeline's answer for every card of the stage names the same verdicts, the bound's
best case), and all but 3 of the roster at work elsewhere. Two passes over the board, each
timed: the first holds the 3 free agents and finds every other card waiting; the second, at
the same moment, finds every card waiting (what each pass costs while the backlog lasts).
The stand-in suite runs in process (`sandbox_session`, no sockets) on a clock that stands
still, on a fresh PostgreSQL database, in a fresh process for each setting.

Printed for each setting: each pass's wall and process CPU time (the stand-in's answers
included), the eligibility reads and the cards decided. With the bound on, every card is
still read (its own grant could admit anybody: superdispatch/loop/backlog.py says why); a
card read alike a card that waited is left undecided.

Run: .venv/bin/python bench/backlog.py [--cards N] [--agents N] [--roster N] [--free N]
Last line: backlog_cards=… pass_s_on=… pass_s_off=… waiting_pass_s_on=… waiting_pass_s_off=…
reads_on=… reads_off=… decided_on=… decided_off=…
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import REVIEW_AND_SHIP  # noqa: E402
from bench._in_process import run_fresh, stand_up  # noqa: E402
from bench._results import last_line  # noqa: E402

BENCH_DB = "superdispatch_bench_backlog"
BOARD, SIDE = "brd_deep", "brd_side"


def scenario(cards: int, agents: int, roster: int) -> dict:
    """The deep board and a side board where the busy agents are at work."""
    return {
        "name": "backlog",
        "seed": 1,
        "start": "2026-11-13T10:00:00.000Z",
        "boards": [
            {"id": BOARD, "initialCards": cards, "stages": REVIEW_AND_SHIP},
            {"id": SIDE, "initialCards": 0, "stages": REVIEW_AND_SHIP},
        ],
        "agents": [
            {"id": f"agt_{a:05d}", "capabilities": ["code-review"], "boards": [BOARD] if a < roster else []}
            for a in range(agents)
        ],
    }


def run(bound: str, cards: int, agents: int, roster: int, free: int) -> dict:
    """In a fresh process: the workspace, the busy agents at work, then two timed passes."""
    os.environ["SUPERDISPATCH_BACKLOG_BOUND"] = bound
    standing = stand_up(scenario(cards, agents, roster))
    loop, now, pipeline = standing.loop, standing.now, standing.suite.pipeline
    # After stand_up (django.setup()): these need the app registry.
    import gc

    import placement
    from superdispatch.loop.passes import run_pass

    assert loop.cfg.backlog_bound == (bound == "on")
    pipeline.set_placement_window(SIDE, 0)  # the side board is not placed: pull takes its cards
    for a in range(free, roster):
        pipeline.claim(f"agt_{a:05d}", pipeline.add_card(SIDE).id)
    reads, decided = [0], [0]
    answer, decide = pipeline.eligibility_json, placement.decide

    def counted_read(board_id, card_id):
        reads[0] += 1
        return answer(board_id, card_id)

    def counted_decide(facts, rules, at):
        decided[0] += 1
        return decide(facts, rules, at)

    pipeline.eligibility_json = counted_read
    placement.decide = counted_decide
    gc.freeze()  # the stand-in's workspace lives as long as the run
    passes = []
    for _ in range(2):
        reads[0] = decided[0] = 0
        started, cpu = time.perf_counter(), time.process_time()
        summary = run_pass(loop, [BOARD], now)
        passes.append(
            {
                "wall_s": time.perf_counter() - started,
                "cpu_s": time.process_time() - cpu,
                "reads": reads[0],
                "decided": decided[0],
                "holds": summary.holds,
                "waits": summary.waits,
                "held_back": summary.held_back,
                "unplaced": summary.unplaced,
            }
        )
    return {"passes": passes}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", choices=("on", "off"))
    parser.add_argument("--cards", type=int, default=5000)
    parser.add_argument("--agents", type=int, default=10000)
    parser.add_argument("--roster", type=int, default=100)
    parser.add_argument("--free", type=int, default=3)
    args = parser.parse_args()
    if min(args.cards, args.agents, args.roster) < 1:
        parser.error("--cards, --agents and --roster must each be at least 1")
    if args.roster > args.agents:
        parser.error(f"--roster {args.roster}: a board cannot roster more than the {args.agents} agents")
    if not 0 <= args.free <= args.roster:
        parser.error(f"--free {args.free}: from 0 to the {args.roster} agents on the roster")
    size = (args.cards, args.agents, args.roster, args.free)
    if args.run:
        print(json.dumps(run(args.run, *size)))
        return
    print(
        f"one board, {args.cards} ready cards, {args.roster} agents on its roster of a workspace of "
        f"{args.agents}, {args.free} of them free; two passes, PostgreSQL, the stand-in in process"
    )
    figures = {}
    for bound in ("on", "off"):
        figures[bound] = run_fresh(
            __file__,
            BENCH_DB,
            bound,
            *[f"--{name}={value}" for name, value in zip(("cards", "agents", "roster", "free"), size)],
        )
        for name, p in zip(("first pass", "then"), figures[bound]["passes"]):
            print(
                f"  bound {bound:3}, {name:10}: {p['wall_s']:6.2f} s ({p['cpu_s']:6.2f} s CPU here), "
                f"{p['reads']} reads, {p['decided']} decided, {p['holds']} held, {p['waits']} waiting "
                f"decided, {p['held_back']} read and left undecided"
            )
    first = {b: figures[b]["passes"][0] for b in figures}
    then = {b: figures[b]["passes"][1] for b in figures}
    last_line(
        f"backlog_cards={args.cards} "
        + " ".join(f"pass_s_{b}={first[b]['wall_s']:.2f}" for b in first)
        + " "
        + " ".join(f"waiting_pass_s_{b}={then[b]['wall_s']:.2f}" for b in then)
        + " "
        + " ".join(f"reads_{b}={first[b]['reads']}" for b in first)
        + " "
        + " ".join(f"decided_{b}={first[b]['decided']}" for b in first)
    )


if __name__ == "__main__":
    main()
