"""Serve the sandbox suite over HTTP on local ports, its agents working in real time.

By default it serves where SuperDispatch's own settings point (SUPERPIPELINE_URL,
ORG_PLANE_URL, AGENTPOD_URL, SUPERWITNESS_URL), accepts the configured service credential and
signs relay deliveries with the configured secret, so `make demo` can start both side by side.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from urllib.parse import SplitResult, urlsplit

import requests
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from sandbox import (
    RealtimeDriver,
    Receiver,
    ReceiverServer,
    SandboxServers,
    ScenarioError,
    Simulation,
    Suite,
    load_scenario,
    system_clock,
)
from sandbox.suite import PRODUCTS, ProductUrls

LOCAL_HOSTS = ("127.0.0.1", "localhost")
# Which setting names each product's address, for the ports and the error messages.
SETTING_OF = {
    "superpipeline": "SUPERPIPELINE_URL",
    "accounts": "ORG_PLANE_URL",
    "agentpod": "AGENTPOD_URL",
    "superwitness": "SUPERWITNESS_URL",
}
TOKEN_ENV = "DEMO_OPERATOR_TOKEN"
TIMEOUT = (2.0, 10.0)


def _local(url: str, setting: str, to: str) -> SplitResult:
    """The setting's URL, split, where it is a local http address with a port the sandbox can
    `to` (serve it, receive there); else the command's error, naming the setting."""
    split = urlsplit(url)
    if split.hostname not in LOCAL_HOSTS or split.port is None or split.scheme != "http":
        raise CommandError(
            f"{setting} is not an http://127.0.0.1:<port> address, so the sandbox cannot {to}; "
            "give --port-base to serve on other ports"
        )
    return split


def configured_ports(cfg) -> dict[str, int]:
    """Each product's port from the settings' URLs (0, any free port, when SUPERWITNESS_URL is unset)."""
    urls = {
        "superpipeline": cfg.superpipeline_url,
        "accounts": cfg.org_plane_url,
        "agentpod": cfg.agentpod_url,
        "superwitness": cfg.superwitness_url,
    }
    ports = {}
    for product, url in urls.items():
        if not url:
            ports[product] = 0
            continue
        ports[product] = _local(url, SETTING_OF[product], "serve it").port
    return ports


def receiver_address(cfg, port_base: int | None) -> tuple[int, str, str]:
    """(port, events path, chat path) for the receiver: where SUPERDISPATCH_EVENTS_URL and
    SUPERDISPATCH_CHAT_WEBHOOK_URL point, or the port after the suite's with --port-base."""
    if port_base is not None:
        return (port_base + len(PRODUCTS) if port_base else 0), "/events", "/chat"
    found = {}
    for name, url in (
        ("SUPERDISPATCH_EVENTS_URL", cfg.events_url),
        ("SUPERDISPATCH_CHAT_WEBHOOK_URL", cfg.chat_webhook_url),
    ):
        if not url:
            continue
        split = _local(url, name, "receive there")
        found[name] = (split.port, split.path or "/")
    if not found:
        raise CommandError("--receiver needs SUPERDISPATCH_EVENTS_URL or SUPERDISPATCH_CHAT_WEBHOOK_URL set")
    if len({port for port, _ in found.values()}) > 1:
        raise CommandError(
            "SUPERDISPATCH_EVENTS_URL and SUPERDISPATCH_CHAT_WEBHOOK_URL must share one port "
            "for the sandbox's receiver"
        )
    port = next(iter(found.values()))[0]
    return (
        port,
        found.get("SUPERDISPATCH_EVENTS_URL", (0, "/events"))[1],
        found.get("SUPERDISPATCH_CHAT_WEBHOOK_URL", (0, "/chat"))[1],
    )


def env_lines(suite: Suite, receiver: ReceiverServer | None = None) -> str:
    """The settings that point SuperDispatch at this suite (and its receiver), as an env file."""
    env = suite.dispatch_config().as_env()
    if receiver is not None:
        env["SUPERDISPATCH_EVENTS_URL"] = receiver.url + receiver.receiver.events_path
        env["SUPERDISPATCH_EVENTS_SECRET"] = receiver.receiver.secret
        env["SUPERDISPATCH_CHAT_WEBHOOK_URL"] = receiver.url + receiver.receiver.chat_path
    return "".join(f"{name}={value}\n" for name, value in env.items())


class Command(BaseCommand):
    help = "Serve the sandbox suite on local ports with its agents working in real time."

    def add_arguments(self, parser):
        parser.add_argument("--scenario", default="demo", help="a shipped scenario's name or a file's path")
        parser.add_argument("--seed", type=int, help="the simulation's seed (default: the scenario's)")
        parser.add_argument(
            "--port-base",
            type=int,
            help="serve SuperPipeline, Accounts, AgentPod and SuperWitness on this port and "
            "the next three (0: any free ports) rather than where the settings point",
        )
        parser.add_argument(
            "--superdispatch",
            metavar="URL",
            help="where SuperDispatch answers (default: http://127.0.0.1:$PORT)",
        )
        parser.add_argument(
            "--relay-target",
            help="where the relay delivers (default: SuperDispatch's webhook; 'none': nowhere)",
        )
        parser.add_argument("--write-env", metavar="FILE", help="write the settings that point at this suite")
        parser.add_argument(
            "--opt-in",
            action="store_true",
            help=f"once SuperDispatch answers, opt the scenario's boards in through its API "
            f"(operator token from {TOKEN_ENV}) before the agents start",
        )
        parser.add_argument(
            "--receiver",
            action="store_true",
            help="also receive SuperDispatch's events and chat posts where "
            "SUPERDISPATCH_EVENTS_URL and SUPERDISPATCH_CHAT_WEBHOOK_URL point, "
            "print each chat post, and count the events",
        )
        parser.add_argument("--tick", type=float, default=1.0, help="seconds between two simulation steps")
        parser.add_argument(
            "--report-every", type=float, default=30.0, help="seconds between two status lines"
        )

    def say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()  # under a process manager stdout is a pipe; show each line as it happens

    def handle(
        self,
        *args,
        scenario: str,
        seed: int | None,
        port_base: int | None,
        superdispatch: str | None,
        relay_target: str | None,
        write_env: str | None,
        opt_in: bool,
        receiver: bool,
        tick: float,
        report_every: float,
        **options,
    ):
        cfg = settings.SUPERDISPATCH
        try:
            spec = load_scenario(scenario)
        except ScenarioError as err:
            raise CommandError(str(err))
        if seed is not None:
            spec = dataclasses.replace(spec, seed=seed)
        if port_base is None:
            ports = configured_ports(cfg)
        else:
            ports = {p: port_base + i if port_base else 0 for i, p in enumerate(PRODUCTS)}
        superdispatch = (superdispatch or f"http://127.0.0.1:{cfg.port}").rstrip("/")
        target = None if relay_target == "none" else (relay_target or superdispatch + "/v1/relay/events")
        urls = ProductUrls(
            agentpod_audience=cfg.agentpod_audience or None,
            superwitness_audience=cfg.superwitness_audience or None,
        )
        suite = Suite(
            spec,
            clock=system_clock,
            urls=urls,
            relay_target=target,
            credential=cfg.org_plane_service_credential,
            relay_secret=cfg.relay_secret,
        )
        servers = SandboxServers(suite, ports=ports)
        inbox = None
        if receiver:
            port, events_path, chat_path = receiver_address(cfg, port_base)
            secret = cfg.events_secret or os.urandom(16).hex()
            try:
                inbox = ReceiverServer(
                    Receiver(
                        secret,
                        events_path,
                        chat_path,
                        on_chat=lambda text: self.say(f"sandbox: chat: {text}"),
                    ),
                    port=port,
                )
            except OSError as err:
                raise CommandError(f"cannot receive on port {port}: {err.strerror}")
        try:
            servers.start()
        except OSError as err:
            servers.stop()
            if inbox is not None:
                inbox.close()
            raise CommandError(f"cannot serve the sandbox on ports {sorted(ports.values())}: {err.strerror}")
        if inbox is not None:
            inbox.start()
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        driver = None
        try:
            self.say(
                f"sandbox: scenario {spec.name} (seed {spec.seed}), "
                + ", ".join(f"{p} {getattr(suite.urls, p)}" for p in PRODUCTS)
                + f"; relay to {target or 'nowhere'}"
                + (f"; receiving events and chat at {inbox.url}" if inbox else "")
            )
            if write_env:
                self._write_env(write_env, suite, inbox)
            if opt_in and not self._opt_in(suite, superdispatch, stop):
                return
            driver = RealtimeDriver(Simulation(suite), tick=tick)
            driver.start()
            self.say(f"sandbox: {len(spec.agents)} agents working on {len(spec.boards)} boards")
            while not stop.wait(report_every):
                self.say(
                    "sandbox: "
                    + status_line(driver.simulation)
                    + (f"; received {inbox.receiver.summary()}" if inbox else "")
                )
        finally:
            if driver is not None:
                driver.stop()
            servers.stop()
            if inbox is not None:
                inbox.stop()
            self.say("sandbox: stopped")

    def _write_env(self, path: str, suite: Suite, inbox: ReceiverServer | None = None) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds the credential
        with os.fdopen(fd, "w") as out:
            out.write(env_lines(suite, inbox))
        self.say(f"sandbox: settings for SuperDispatch written to {path}")

    def _opt_in(self, suite: Suite, base: str, stop: threading.Event) -> bool:
        """Wait for SuperDispatch, opt every board in, then wait for its placement windows."""
        token = os.environ.get(TOKEN_ENV)
        if not token:
            raise CommandError(f"--opt-in needs the operator token in {TOKEN_ENV}")
        while not stop.is_set() and not _answers(base + "/healthz"):
            stop.wait(0.5)
        if stop.is_set():
            return False
        boards = [b.id for b in suite.scenario.boards]
        for board_id in boards:
            answer = requests.put(
                f"{base}/v1/boards/{board_id}", headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT
            )
            if answer.status_code not in (200, 201):
                raise CommandError(f"opting {board_id} in was answered {answer.status_code}")
        self.say(f"sandbox: opted in {', '.join(boards)}")
        # The agents start once SuperDispatch has set each board's placement window, so the
        # first cards are placed rather than pulled before SuperDispatch could look.
        deadline = time.monotonic() + 30
        while not stop.is_set() and time.monotonic() < deadline:
            with suite.lock:
                if all(suite.pipeline.board(b).placement_window_seconds for b in boards):
                    break
            stop.wait(0.2)
        else:
            if not stop.is_set():
                self.say("sandbox: no placement window set within 30 s; starting the agents anyway")
        stop.wait(2)  # the look that follows the window places the cards already waiting
        return not stop.is_set()


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=TIMEOUT).status_code == 200
    except requests.RequestException:
        return False


def status_line(sim: Simulation) -> str:
    """Claims, the share taken under a hold, run outcomes and no-shows so far."""
    summary = sim.metrics.summary()
    claims = summary["claims"]
    held = f"{claims['reservedShare']:.0%} under a hold" if claims["count"] else "none under a hold"
    runs = ", ".join(f"{n} {status}" for status, n in summary["runs"].items()) or "no runs finished"
    return f"{claims['count']} claims ({held}); {runs}; {summary['noShows']} no-shows"
