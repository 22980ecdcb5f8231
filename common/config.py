"""Every setting SuperDispatch reads, validated once at start into one frozen object.

Each field names its environment variable, its rule and its default (None: required).
A missing or malformed value stops start-up with the setting's name and rule, never its
value.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import Field, dataclass, field, fields
from typing import Any, Callable, Iterable, Mapping
from urllib.parse import urlsplit

import environ

# SUPERDISPATCH_FORMULA is validated here, against the formulas placement declares: the layers
# (.importlinter) put `common` just above `placement` for it. Placement is pure and imports
# nothing of ours, so reading the settings still does no I/O and loads no other layer.
from placement import Rules, formulas


class ConfigError(Exception):
    """One or more settings are missing or malformed; the message names each, never a value."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


# Parsers: each turns the raw text into a value or raises ValueError. The rule text is what
# the error says, so a parser never echoes the value it was given.


def _url(raw: str) -> str:
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError
    return raw.rstrip("/")


def _int_range(lo: int, hi: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        if not re.fullmatch(r"[0-9]+", raw.strip()):
            raise ValueError
        value = int(raw)
        if not lo <= value <= hi:
            raise ValueError
        return value

    return parse


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw not in allowed:
            raise ValueError
        return raw

    return parse


def _on_off(raw: str) -> bool:
    if raw not in ("on", "off"):
        raise ValueError
    return raw == "on"


def _matching(pattern: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if not re.fullmatch(pattern, raw):
            raise ValueError
        return raw

    return parse


def _sha256_hex(raw: str) -> str:
    """A SHA-256 in hex, either case, read as lower case: what the token's digest is compared to."""
    if not re.fullmatch(r"[0-9a-fA-F]{64}", raw):
        raise ValueError
    return raw.lower()


def _absolute_path(raw: str) -> str:
    if not os.path.isabs(raw):
        raise ValueError
    return raw


def _database_url(raw: str) -> dict[str, Any]:
    if not raw.startswith(("postgres://", "postgresql://", "sqlite:///")):
        raise ValueError
    config: dict[str, Any] = environ.Env.db_url_config(raw)
    return config


def _redis_url(raw: str) -> str:
    if not raw.startswith(("redis://", "rediss://")):
        raise ValueError
    return raw


def _hosts(raw: str) -> tuple[str, ...]:
    hosts = tuple(h.strip() for h in raw.split(",") if h.strip())
    if not hosts:
        raise ValueError
    return hosts


def _each(parse: Callable[[str], Any]) -> Callable[[str], tuple[Any, ...]]:
    """A comma-separated list, each entry read by `parse`; an empty entry is malformed."""

    def parse_all(raw: str) -> tuple[Any, ...]:
        items = [item.strip() for item in raw.split(",")]
        if not all(items):
            raise ValueError
        return tuple(parse(item) for item in items)

    return parse_all


def _formula(raw: str) -> str:
    """A formula's recorded name, as `placement/formulas.py` declares it."""
    if formulas.named(raw) is None:
        raise ValueError
    return raw


def setting(
    env: str, parse: Callable[[str], Any], rule: str | Callable[[], str], default: str | None = None
) -> Any:
    """Declare one setting: the variable, its parser, its rule in words (or what words it out when
    read, for a rule that follows declarations made elsewhere), its default."""
    return field(metadata={"env": env, "parse": parse, "rule": rule, "default": default})


def _words(allowed: Iterable[str]) -> str:
    """`a, b or c`."""
    allowed = list(allowed)
    return allowed[0] if len(allowed) == 1 else ", ".join(allowed[:-1]) + " or " + allowed[-1]


def ranged(env: str, lo: int, hi: int, default: str | None = None) -> Any:
    """A setting that is a whole number from `lo` to `hi`."""
    return setting(env, _int_range(lo, hi), f"an integer from {lo} to {hi}", default)


def on_off(env: str, default: str) -> Any:
    """A setting that is `on` or `off`, read as a bool."""
    return setting(env, _on_off, "on or off", default)


def one_of(env: str, *allowed: str, default: str | None = None) -> Any:
    """A setting that is one of a few words."""
    return setting(env, _choice(*allowed), _words(allowed), default)


@dataclass(frozen=True)
class Config:
    # Required
    superpipeline_url: str = setting("SUPERPIPELINE_URL", _url, "an http(s) URL")
    org_plane_url: str = setting("ORG_PLANE_URL", _url, "an http(s) URL")
    # Its hex in either case, as Accounts' "20 hex" allows; sent as given, never re-cased.
    org_plane_service_credential: str = setting(
        "ORG_PLANE_SERVICE_CREDENTIAL",
        _matching(r"svc_[0-9a-fA-F]{20}:\S+"),
        "svc_<20 hex, either case>:<secret>",
    )
    agentpod_url: str = setting("AGENTPOD_URL", _url, "an http(s) URL")
    relay_secret: str = setting(
        "TREATY_RELAY_DELIVERY_SECRET",
        _matching(r"\S{16,}"),
        "at least 16 characters, none of them whitespace",
    )
    # Several digests, comma-separated, let a new token be rolled out before the old one goes.
    operator_token_sha256: tuple[str, ...] = setting(
        "SUPERDISPATCH_OPERATOR_TOKEN_SHA256",
        _each(_sha256_hex),
        "64 hex digits, either case (the SHA-256 of the operator token), or several comma-separated",
    )
    # Where it runs
    agentpod_audience: str = setting(
        "AGENTPOD_AUDIENCE", _url, "an http(s) URL", default=""
    )  # "" → AGENTPOD_URL
    data_dir: str = setting("SUPERDISPATCH_DATA_DIR", _absolute_path, "an absolute path", "/data")
    port: int = ranged("PORT", 1, 65535, "8796")
    database: dict[str, Any] = setting(
        "DATABASE_URL", _database_url, "postgres://… or sqlite:///…", default=""
    )  # "" → SQLite under SUPERDISPATCH_DATA_DIR
    redis_url: str = setting("REDIS_URL", _redis_url, "redis://…", default="")  # "" → no Redis
    allowed_hosts: tuple[str, ...] = setting(
        "SUPERDISPATCH_ALLOWED_HOSTS", _hosts, "comma-separated host names", "localhost,127.0.0.1,[::1]"
    )
    https: bool = on_off("SUPERDISPATCH_HTTPS", default="off")
    # On PostgreSQL, a statement a web request runs is cancelled past this (its request is a
    # 503 and its thread free again); the loop and Celery tasks, which may run long, are not.
    request_statement_seconds: int = ranged("SUPERDISPATCH_REQUEST_STATEMENT_SECONDS", 1, 3600, "30")
    log_format: str = one_of("SUPERDISPATCH_LOG_FORMAT", "text", "json", default="text")
    # Placement
    sweep_seconds: int = ranged("SUPERDISPATCH_SWEEP_SECONDS", 5, 3600, "30")
    sweep_shard_boards: int = ranged("SUPERDISPATCH_SWEEP_SHARD_BOARDS", 1, 100000, "100")
    # How long a pass's lease on a board lasts from when it is taken: a pass whose worker died
    # leaves its boards to others after this long. The loop's tasks are stopped (Celery's time
    # limits) before it, so no pass outlives its lease.
    lease_seconds: int = ranged("SUPERDISPATCH_LEASE_SECONDS", 10, 3600, "180")
    reservation_seconds: int = ranged("SUPERDISPATCH_RESERVATION_SECONDS", 10, 300, "60")
    runner_up_seconds: int = ranged("SUPERDISPATCH_RUNNER_UP_SECONDS", 10, 300, "30")
    placement_window_seconds: int = ranged("SUPERDISPATCH_PLACEMENT_WINDOW_SECONDS", 0, 30, "10")
    # For a formula that sets each board's window from evidence: the shortest it sets.
    placement_window_min_seconds: int = ranged("SUPERDISPATCH_PLACEMENT_WINDOW_MIN_SECONDS", 0, 30, "0")
    # For a formula that sizes each hold by its agent: the shortest hold it makes.
    hold_min_seconds: int = ranged("SUPERDISPATCH_HOLD_MIN_SECONDS", 5, 300, "10")
    top_k: int = ranged("SUPERDISPATCH_TOP_K", 1, 10, "3")
    fairness: str = one_of("SUPERDISPATCH_FAIRNESS", "round-robin", "board-order", default="round-robin")
    candidates: str = one_of("SUPERDISPATCH_CANDIDATES", "roster", "all", default="roster")
    station_filters: bool = on_off("SUPERDISPATCH_STATION_FILTERS", default="on")
    min_proof: str = one_of("SUPERDISPATCH_MIN_PROOF", "probed", "installed", "declared", default="declared")
    policy: bool = on_off("SUPERDISPATCH_POLICY", default="off")
    # Validated against the formulas as declared when the settings are read.
    formula: str = setting(
        "SUPERDISPATCH_FORMULA",
        _formula,
        lambda: _words(formulas.recorded_names()),
        default=formulas.DEFAULT.recorded,
    )
    backlog_bound: bool = on_off("SUPERDISPATCH_BACKLOG_BOUND", default="on")
    # When an experiment reaches its decision, each of its boards runs the winning arm (its own
    # formula, audited); off: the result is shown and nothing changes.
    autopilot: bool = on_off("SUPERDISPATCH_AUTOPILOT", default="off")
    # History
    superwitness_url: str = setting("SUPERWITNESS_URL", _url, "an http(s) URL", default="")
    superwitness_audience: str = setting(
        "SUPERWITNESS_AUDIENCE", _url, "an http(s) URL", default=""
    )  # "" → SUPERWITNESS_URL
    history_days: int = ranged("SUPERDISPATCH_HISTORY_DAYS", 1, 365, "30")
    history_min_sample: int = ranged("SUPERDISPATCH_HISTORY_MIN_SAMPLE", 1, 100, "3")
    history_half_life_days: int = ranged("SUPERDISPATCH_HISTORY_HALF_LIFE_DAYS", 1, 365, "7")
    # Suggestions
    suggest_every_seconds: int = ranged("SUPERDISPATCH_SUGGEST_EVERY_SECONDS", 0, 86400, "0")
    suggest_window_hours: int = ranged("SUPERDISPATCH_SUGGEST_WINDOW_HOURS", 1, 720, "24")
    stall_minutes: int = ranged("SUPERDISPATCH_STALL_MINUTES", 1, 1440, "30")
    # Learned routing
    learned: str = one_of("SUPERDISPATCH_LEARNED", "off", "shadow", "on", default="off")
    learned_min_rows: int = setting(
        "SUPERDISPATCH_LEARNED_MIN_ROWS", _int_range(1, 10_000_000), "an integer from 1 to 10000000", "500"
    )
    learned_min_shadow: int = setting(
        "SUPERDISPATCH_LEARNED_MIN_SHADOW", _int_range(1, 1_000_000), "an integer from 1 to 1000000", "100"
    )
    learned_margin_pct: int = ranged("SUPERDISPATCH_LEARNED_MARGIN_PCT", 0, 100, "5")
    # What a model learns and is judged on: that a held agent claims, or that it claims and
    # its run succeeds (the claim's run as joined from SuperWitness).
    learned_target: str = one_of("SUPERDISPATCH_LEARNED_TARGET", "claimed", "succeeded", default="claimed")
    # How the shadow report credits the model where it disagreed with the formula: only when
    # its own choice claimed anyway (a lower bound), or by the what-if estimator, the gate
    # reading the estimate's interval's lower end.
    learned_credit: str = one_of(
        "SUPERDISPATCH_LEARNED_CREDIT", "lower-bound", "estimate", default="lower-bound"
    )
    # Retention: settled decisions (and their candidates) older than this are pruned. The
    # floor is above the longest suggestions window (720 hours), so pruning never takes what
    # a sync reads.
    retain_days: int = ranged("SUPERDISPATCH_RETAIN_DAYS", 31, 3650, "90")
    # Events out: decisions and settlements POSTed, signed, to the operator's own receiver;
    # new suggestions posted to a chat webhook. Unset: nothing is sent.
    events_url: str = setting("SUPERDISPATCH_EVENTS_URL", _url, "an http(s) URL", default="")
    events_secret: str = setting(
        "SUPERDISPATCH_EVENTS_SECRET", _matching(r"\S{16,}"), "at least 16 characters", default=""
    )
    chat_webhook_url: str = setting("SUPERDISPATCH_CHAT_WEBHOOK_URL", _url, "an http(s) URL", default="")
    public_url: str = setting(
        "SUPERDISPATCH_PUBLIC_URL", _url, "an http(s) URL", default=""
    )  # "" → http://localhost:PORT, for links to the admin

    @property
    def start_line(self) -> str:
        """The line the web process prints at start, naming the settings that widen its reach."""
        return (
            f"superdispatch: listening on :{self.port}, sweeping every {self.sweep_seconds}s, "
            f"candidates {self.candidates}, policy {'on' if self.policy else 'off'}, "
            f"learned routing {self.learned}"
        )


def declared() -> list[tuple[str, str | None, str]]:
    """(variable, default, rule) for every setting, in declaration order; default None: required."""
    return [(f.metadata["env"], f.metadata["default"], _rule(f)) for f in fields(Config)]


def _rule(f: Field[Any]) -> str:
    rule: str | Callable[[], str] = f.metadata["rule"]
    return rule() if callable(rule) else rule


def load(env: Mapping[str, str] = os.environ) -> Config:
    """Read and validate every setting; raise ConfigError naming each bad one."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for f in fields(Config):
        name, parse, default = (f.metadata[k] for k in ("env", "parse", "default"))
        rule = _rule(f)
        raw = env.get(name, "")
        if raw == "":
            if default is None:
                problems.append(f"{name} is required ({rule})")
                continue
            if default == "":
                values[f.name] = ""
                continue
            raw = default
        try:
            values[f.name] = parse(raw)
        except (ValueError, TypeError):
            problems.append(f"{name} must be {rule}")
    # A receiver needs both halves: an address, and the secret its events are signed with.
    if env.get("SUPERDISPATCH_EVENTS_URL", "") and not env.get("SUPERDISPATCH_EVENTS_SECRET", ""):
        problems.append(
            "SUPERDISPATCH_EVENTS_SECRET is required when SUPERDISPATCH_EVENTS_URL "
            "is set (at least 16 characters)"
        )
    # The bounds a formula sets windows and holds within: the least no more than the most.
    for least, most in (
        ("placement_window_min_seconds", "placement_window_seconds"),
        ("hold_min_seconds", "runner_up_seconds"),
    ):
        if least in values and most in values and values[least] > values[most]:
            # Names only: a start-up error never prints a setting's value.
            problems.append(f"SUPERDISPATCH_{least.upper()} must be at most SUPERDISPATCH_{most.upper()}")
    if problems:
        raise ConfigError(problems)
    values["agentpod_audience"] = values["agentpod_audience"] or values["agentpod_url"]
    values["superwitness_audience"] = values["superwitness_audience"] or values["superwitness_url"]
    values["public_url"] = values["public_url"] or f"http://localhost:{values['port']}"
    if not values["database"]:
        path = os.path.join(values["data_dir"], "superdispatch.sqlite3")
        values["database"] = environ.Env.db_url_config(f"sqlite:///{path}")
    return Config(**values)


def load_or_exit(env: Mapping[str, str] = os.environ) -> Config:
    """Load the settings, or print what is wrong and stop the process before it does anything."""
    try:
        return load(env)
    except ConfigError as err:
        for problem in err.problems:
            print(f"superdispatch: setting {problem}", file=sys.stderr)
        raise SystemExit(2)


def rules_from(cfg: Config) -> Rules:
    """The rules placement decides under, as the settings set them."""
    return Rules(
        top_k=cfg.top_k,
        reservation_seconds=cfg.reservation_seconds,
        runner_up_seconds=cfg.runner_up_seconds,
        candidates=cfg.candidates,
        station_filters=cfg.station_filters,
        min_proof=cfg.min_proof,
        history_min_sample=cfg.history_min_sample,
        history_half_life_days=float(cfg.history_half_life_days),
        formula=cfg.formula,
        placement_window_s=cfg.placement_window_seconds,
        hold_min_s=cfg.hold_min_seconds,
        window_min_s=cfg.placement_window_min_seconds,
    )
