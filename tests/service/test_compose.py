"""docker-compose.yml names only what the project has: every command and healthcheck of our
own services is a manage.py command, a Celery subcommand of our app, or Python that
compiles, with options their parsers accept, and URLs that resolve to our routes."""

import importlib.util
import re
import shlex
from pathlib import Path
from urllib.parse import urlsplit

import click
import pytest
import yaml
from celery.bin.base import CLIContext
from celery.bin.celery import celery as celery_cli
from django.core.management import get_commands, load_command_class
from django.urls import resolve

from superdispatch.celery import app

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
OURS = {name: s for name, s in COMPOSE["services"].items() if "build" in s}


def argv(value) -> list[str]:
    """A command as the container runs it: compose's `$$` is a literal `$`."""
    if isinstance(value, str):
        value = shlex.split(value)
    return [part.replace("$$", "$") for part in value]


def healthcheck_argv(service: dict) -> list[str] | None:
    test = service.get("healthcheck", {}).get("test")
    if test is None:
        return None
    kind, *rest = test
    assert kind in ("CMD", "CMD-SHELL"), kind
    return argv(rest[0]) if kind == "CMD-SHELL" else argv(rest)


def run_in_project(args: list[str]) -> None:
    """Fail unless `args` names something this project has, with options it accepts."""
    program, *rest = args
    if program == "python" and rest[0] == "manage.py":
        name, *options = rest[1:]
        commands = get_commands()
        assert name in commands, f"manage.py has no command {name!r}"
        command = load_command_class(commands[name], name)
        command.create_parser("manage.py", name).parse_args(options)  # exits on a bad option
    elif program == "python" and rest[0] == "-c":
        compile(rest[1], "<compose>", "exec")
    elif program == "celery":
        assert rest[:2] == ["-A", "superdispatch"], rest
        assert importlib.util.find_spec(rest[1]) is not None
        sub, *options = rest[2:]
        assert sub in celery_cli.commands, f"celery has no subcommand {sub!r}"
        parent = click.Context(celery_cli, obj=CLIContext(app=app, no_color=True, workdir=None))
        context = celery_cli.commands[sub].make_context(sub, list(options), parent=parent)
        if sub == "inspect":
            assert callable(getattr(app.control.inspect(), context.params["command"], None))
    else:
        pytest.fail(f"not a command of this project: {args}")


def test_our_services_are_the_processes_the_readme_names_and_the_smoke():
    assert set(OURS) == {"migrate", "web", "worker", "placer", "beat", "smoke"}


@pytest.mark.parametrize("name", sorted(OURS))
def test_every_command_exists_in_the_project(name):
    run_in_project(argv(OURS[name]["command"]))


@pytest.mark.parametrize("name", sorted(OURS))
def test_every_healthcheck_exists_in_the_project(name):
    args = healthcheck_argv(OURS[name])
    if args is not None:
        run_in_project(args)


def test_web_and_worker_have_healthchecks_and_the_web_one_asks_healthz_on_its_port():
    web = healthcheck_argv(OURS["web"])
    [url] = re.findall(r"http://[^'\"]+", web[-1])
    parts = urlsplit(url)
    assert resolve(parts.path).url_name == resolve("/healthz").url_name
    assert parts.port == int(OURS["web"]["ports"][0].rsplit(":", 1)[1])  # the container's port
    worker = healthcheck_argv(OURS["worker"])
    assert worker[2:5] == ["superdispatch", "inspect", "ping"]
    assert "celery@$HOSTNAME" in worker  # this worker, by its default node name
    placer = healthcheck_argv(OURS["placer"])
    assert placer[2:5] == ["superdispatch", "inspect", "ping"]
    assert "placement@$HOSTNAME" in placer  # the placement worker, by the name it is given


def queues_of(args: list[str]) -> set[str]:
    return set(args[args.index("-Q") + 1].split(","))


def node_of(args: list[str]) -> str:
    return args[args.index("-n") + 1] if "-n" in args else "celery@%h"


def procfile(name: str) -> dict[str, list[str]]:
    lines = (ROOT / name).read_text().splitlines()
    return {line.split(":", 1)[0]: shlex.split(line.split(":", 1)[1]) for line in lines if line}


def test_relayed_cards_board_looks_and_board_changes_have_a_queue_of_their_own():
    """What callers send (the relay, the operator's opt-ins and opt-outs) goes to `placement`;
    the sweeps' queue carries only beat's periodic work and the sweeps' shards, so no burst of
    calls can hold a sweep up."""
    router = app.amqp.router
    for task in ("superdispatch.place_card", "superdispatch.look_at_board", "superdispatch.board_changed"):
        assert router.route({}, task)["queue"].name == "placement"
    for task in (
        "superdispatch.sweep",
        "superdispatch.sweep_shard",
        "superdispatch.prune",
        "superdispatch.prune_deliveries",
        "superdispatch.deliver_outbox",
    ):
        assert router.route({}, task)["queue"].name == "celery"


@pytest.mark.parametrize("where", ["docker-compose.yml", "Procfile", "Procfile.demo"])
def test_each_queue_has_workers_of_its_own_with_distinct_names(where):
    if where == "docker-compose.yml":
        workers = [argv(s["command"]) for s in OURS.values() if "worker" in argv(s["command"])]
    else:
        workers = [args for args in procfile(where).values() if "worker" in args]
    assert sorted(frozenset(queues_of(args)) for args in workers) == sorted(
        [frozenset({"celery"}), frozenset({"placement"})], key=sorted
    )
    assert len({node_of(args) for args in workers}) == len(workers)  # one machine, two names


def test_the_smoke_runs_once_after_the_others_are_up_and_can_reach_the_web_service():
    smoke = OURS["smoke"]
    assert smoke["restart"] == "no"
    assert smoke["depends_on"]["web"] == {"condition": "service_healthy"}
    assert smoke["depends_on"]["worker"] == {"condition": "service_healthy"}
    args = argv(smoke["command"])
    url = urlsplit(args[args.index("--url") + 1])
    assert url.hostname in COMPOSE["services"]
    allowed = smoke["environment"]["SUPERDISPATCH_ALLOWED_HOSTS"].split(",")
    assert url.hostname in allowed  # the web server answers to that name


def test_no_command_leaves_a_variable_for_compose_to_fill_from_the_host():
    for name, service in OURS.items():
        for value in (service["command"], service.get("healthcheck", {}).get("test", [])):
            text = " ".join(value) if isinstance(value, list) else value
            assert not re.search(r"(?<!\$)\$(?!\$)", text), name


@pytest.mark.parametrize("where", ["docker-compose.yml", "Procfile"])
def test_the_placement_worker_runs_four_passes_at_once(where):
    """A relayed card's pass mostly waits (on SuperPipeline's reads, the store's commit): at 20
    cards a second, two processes fell behind under bench/load.py and a card waited seconds in
    the queue (docs/performance.md); four overlap those waits."""
    if where == "docker-compose.yml":
        workers = [argv(s["command"]) for s in OURS.values() if "worker" in argv(s["command"])]
    else:
        workers = [args for args in procfile(where).values() if "worker" in args]
    [placer] = [args for args in workers if queues_of(args) == {"placement"}]
    assert int(placer[placer.index("--concurrency") + 1]) == 4
