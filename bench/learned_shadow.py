"""Learned routing in the sandbox, end to end: a model trained on a few thousand settled
decisions watches in shadow, and its report reads in the admin.

On a virtual clock, in-process: the loop places a scenario's traffic (relayed card.ready at
once, a sweep every 30 s) until enough decisions have settled, trains a model on them (the
same `do_train` as `POST /v1/models/train`), switches learned routing to shadow, places as
much traffic again, then reads the model's shadow report and renders its admin page.

The large scenario brings more work than its agents finish, so its backlog grows and each
pass has more ready cards to weigh: on a two-core machine, --decisions 2000 takes about half an
hour and 3000 about an hour.

Run: .venv/bin/python bench/learned_shadow.py [--scenario large] [--decisions 3000]
"""

from __future__ import annotations

import argparse
import html
import logging
import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "superdispatch.settings_test")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from bench._lab import scenario_arg  # noqa: E402
from bench._results import last_line  # noqa: E402
from learning.core.train import TrainingError  # noqa: E402
from sandbox.scenario import Scenario  # noqa: E402

SWEEP_EVERY_S = 30


def run(scenario: Scenario, wanted: int) -> dict:
    from django.contrib.auth import get_user_model

    # Imported here, after django.setup() in this process: the project's modules load models.
    from learning import actions, runtime, store
    from records.models import Decision
    from tests.support.admin_pages import change_url
    from tests.support.world import make_world

    world = make_world(scenario, arrivals=True)
    world.opt_in(*(b.id for b in world.suite.scenario.boards))

    on_tick = world.drive(SWEEP_EVERY_S)
    world.sweep()
    started = time.perf_counter()
    while Decision.objects.filter(outcome_status__isnull=False).count() < wanted:
        world.sim.run(600, on_tick=on_tick)
    simulated_s = (world.now - world.suite.scenario.start).total_seconds()
    settled = Decision.objects.filter(outcome_status__isnull=False).count()

    model = actions.do_train(None, 1, now=world.now)
    world.loop.cfg = replace(world.loop.cfg, learned="shadow")
    runtime.reset_cache()
    world.sim.run(int(simulated_s), on_tick=on_tick)
    world.sweep()  # settle what the last tick held

    report = store.shadow_report_json(model, world.loop.cfg)
    staff = get_user_model().objects.create_superuser("bench", password="bench-password")
    client = Client()
    client.force_login(staff)
    page = client.get(change_url(model))
    return {
        "simulated_h": 2 * simulated_s / 3600,
        "wall_s": time.perf_counter() - started,
        "trained_on": settled,
        "metrics": model.metrics,
        "report": report,
        "admin_status": page.status_code,
        "admin_page": page.content.decode(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="large")
    parser.add_argument("--decisions", type=int, default=3000)
    args = parser.parse_args()
    if args.decisions < 1:
        parser.error("--decisions must be at least 1")
    scenario = scenario_arg(parser, args.scenario)  # a bad one is named before any work starts
    logging.getLogger("superdispatch").setLevel(logging.WARNING)
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        out = run(scenario, args.decisions)
    except TrainingError as err:
        sys.exit(
            f"learned_shadow.py: no model from {args.decisions} settled decisions: {err}; "
            "ask for more with --decisions"
        )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    m, r = out["metrics"], out["report"]
    print(f"scenario {args.scenario}: {out['simulated_h']:.1f} simulated hours in {out['wall_s']:.0f} s")
    print(
        f"trained on {out['trained_on']} settled decisions ({m['count']} rows, "
        f"{m['positives']} positives): holdout auc {m['auc']}, train auc {m['trainAuc']}, "
        f"log loss {m['logLoss']}"
    )
    print(
        f"shadow: {r['decisions']} settled decisions counted, {r['agree']} agree, "
        f"{r['disagree']} disagree; formula rate {r['formulaRate']}, model rate {r['modelRate']} "
        f"(a lower bound), margin {r['marginPct']} points"
    )
    gate = r["gate"]
    print(f"gate now: {'passes' if gate['passed'] else 'short: ' + str(gate['failing'])}")
    page = out["admin_page"]
    shown = [w for w in ("calibration", "shadow", "gate", "auc") if w in page.lower()]
    print(f"admin model page: HTTP {out['admin_status']}, shows {', '.join(shown)}")
    verdict = re.search(r'class="sd-verdict[^"]*">(.*?)</span>', page, re.S)
    if verdict:
        print("admin verdict: " + " ".join(re.sub(r"<[^>]+>", "", html.unescape(verdict[1])).split()))
    last_line(
        f"shadow_decisions={r['decisions']} formula_rate={r['formulaRate']} "
        f"model_rate={r['modelRate']} holdout_auc={m['auc']}"
    )


if __name__ == "__main__":
    main()
