"""What the in-process benches share (bench/relay_pass.py, bench/shard_pass.py): the loop on the
stand-in suite without sockets, on a clock that stands still, each run in a fresh process on a
fresh PostgreSQL database of its own, so their figures move little from run to run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bench._common import PYTHON, REDIS_DB_URL, base_env, drop_database, fresh_database, temp_dir
from sandbox import Suite, sandbox_session
from sandbox.clock import parse_rfc3339
from sandbox.scenario import parse_scenario


@dataclass
class Standing:
    suite: Suite
    loop: Any  # superdispatch.loop.Loop, importable only once Django is set up
    now: datetime


def stand_up(spec: dict) -> Standing:
    """In this (fresh) process: the suite, Django on the run's database, every board opted in,
    and a loop on the suite in process, quiet but for warnings."""
    suite = Suite.from_scenario(parse_scenario(spec))
    os.environ.update(suite.dispatch_config().as_env())
    import django

    django.setup()
    # After django.setup(): these need the app registry.
    import logging

    from django.conf import settings
    from django.core.cache import cache
    from django.core.management import call_command

    from records.store.actions.boards import do_opt_in
    from records.store.signals import board_changed
    from superdispatch.clients import build_clients
    from superdispatch.loop import Loop
    from superdispatch.loop.windows import ensure_windows

    call_command("migrate", verbosity=0)
    cache.clear()
    logging.getLogger("superdispatch").setLevel(logging.WARNING)  # a line a hold, else
    board_changed.disconnect(dispatch_uid="superdispatch.board_changed")
    now = parse_rfc3339(spec["start"])
    for board in spec["boards"]:
        do_opt_in(board["id"], now)
    loop = Loop(
        build_clients(settings.SUPERDISPATCH, session=sandbox_session(suite), now=now.timestamp),
        settings.SUPERDISPATCH,
        clock=lambda: now,
    )
    ensure_windows(loop, now)
    return Standing(suite, loop, now)


def run_fresh(script: str, database: str, *args: str) -> dict:
    """Run `script --run args...` in a fresh process on a fresh database; its last line, as JSON."""
    data_dir = temp_dir("in-process")
    env = base_env({}, data_dir, fresh_database("postgres", database, data_dir), REDIS_DB_URL)
    try:
        done = subprocess.run([PYTHON, script, "--run", *args], env=env, stdout=subprocess.PIPE, text=True)
    finally:
        drop_database("postgres", database)
    if done.returncode:
        sys.exit(f"the run {' '.join(args)} failed (exit {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])
