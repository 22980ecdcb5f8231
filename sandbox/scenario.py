"""Scenario files: the suite's boards, agents and stations, and how the simulation behaves.

A scenario is a JSON file in `sandbox/scenarios/`; `load_scenario` validates it and names
the first field that is wrong, by its path in the file.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from .clock import DEFAULT_START, parse_rfc3339

SCENARIO_DIR = Path(__file__).resolve().parent / "scenarios"
OWNER_KINDS = ("capability", "agent", "human")
ISOLATIONS = ("host", "container", "sandbox")
PROOFS = ("declared", "installed", "probed")
SCOPES = ("cards:read", "dispatch:read", "dispatch:reserve", "policy:decide")


class ScenarioError(ValueError):
    """A scenario file that cannot be used, with where and why."""


@dataclass(frozen=True)
class StageSpec:
    key: str
    name: str
    order: int
    owner_kind: str
    owner: str
    requires: dict | None  # {"all": [...], "any": [...]} as SuperPipeline serves it
    placement: dict | None  # {"isolation", "models", "tools", "credentials"}


@dataclass(frozen=True)
class BoardSpec:
    id: str
    name: str
    stages: tuple[StageSpec, ...]
    arrival_per_minute: float = 0.0  # new cards entering the first stage
    placement_window_seconds: int = 0
    priority_weights: tuple[tuple[int, float], ...] = ((0, 1.0),)
    initial_cards: int = 0
    burst_every_minutes: float = 0.0  # besides the steady rate: every so often, a batch at once
    burst_cards: int = 0

    def draw_priority(self, rng: random.Random) -> int:
        """A new card's priority, drawn by the board's weights."""
        priorities = [p for p, _ in self.priority_weights]
        return rng.choices(priorities, weights=[w for _, w in self.priority_weights])[0]


@dataclass(frozen=True)
class Membership:
    """An agent's place on one board: it pulls there, with or without a bridge row."""

    board_id: str
    bridge: bool = True  # a bridge row on AgentPod's roster; False: it pulls with its own token
    enabled: bool = True  # a disabled row keeps the agent from pulling on this board
    key: str = ""


@dataclass(frozen=True)
class AgentSpec:
    id: str
    principal_id: str | None
    capabilities: tuple[str, ...]
    station_id: str | None
    memberships: tuple[Membership, ...]
    speed_seconds: float = 60.0  # mean time to work a card
    success_rate: float = 0.9
    stage_success: tuple[tuple[str, float], ...] = ()  # per stage key, where it differs
    verdict_quality: float = 0.8  # chance a succeeded run's verdict approves
    no_show: float = 0.0  # chance the agent ignores a card held for it
    poll_seconds: float = 5.0
    concurrency: int = 1  # SuperPipeline's per-board limit
    capacity: int | None = None  # as `GET /v1/agents/load` reports it
    grants: tuple[str, ...] | None = None  # boards it may claim on; None: every board
    ready: bool = True  # its station is up (the bridge row's `ready`)


@dataclass(frozen=True)
class StationSpec:
    """A station of AgentPod's registry, in the catalog's own shape (occupant is derived)."""

    station_id: str
    runtime: str | None
    harness: str | None
    isolation: dict | None
    models: tuple[dict, ...]
    tools: tuple[dict, ...]
    credentials: tuple[dict, ...]


@dataclass(frozen=True)
class PolicyRule:
    agent_id: str
    allow: bool
    board_id: str | None = None
    stage_key: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class PolicySpec:
    version: str
    rules: tuple[PolicyRule, ...] = ()
    limits: tuple[tuple[str, int, float], ...] = ()  # (agent id, maxRuns, windowHours)
    default_allow: bool = True


@dataclass(frozen=True)
class Scenario:
    name: str
    seed: int
    tenant_id: str
    start: datetime
    boards: tuple[BoardSpec, ...]
    agents: tuple[AgentSpec, ...]
    stations: tuple[StationSpec, ...] = ()
    policy: PolicySpec | None = None
    credential_scopes: tuple[str, ...] = SCOPES


_REQUIRED = object()


class _Field:
    """One JSON object being read, with its path for error messages."""

    def __init__(self, data: Any, path: str) -> None:
        if not isinstance(data, dict):
            raise ScenarioError(f"{path}: must be an object")
        self.data = data
        self.path = path

    def _get(self, key: str, default: Any) -> Any:
        if key in self.data and self.data[key] is not None:
            return self.data[key]
        if default is _REQUIRED:
            raise ScenarioError(f"{self.path}.{key}: is required")
        return default

    def fail(self, key: str, why: str) -> ScenarioError:
        return ScenarioError(f"{self.path}.{key}: {why}")

    def text(self, key: str, default: Any = _REQUIRED) -> Any:
        value = self._get(key, default)
        if value is not default and (not isinstance(value, str) or not value):
            raise self.fail(key, "must be a non-empty string")
        return value

    def number(self, key: str, low: float, high: float, default: Any = _REQUIRED) -> float:
        value = self._get(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise self.fail(key, f"must be a number from {low} to {high}")
        return float(value)

    def integer(self, key: str, low: int, high: int, default: Any = _REQUIRED) -> int:
        value = self._get(key, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(key, f"must be a whole number from {low} to {high}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def items(self, key: str, default: Any = _REQUIRED) -> list:
        value = self._get(key, default)
        if not isinstance(value, list):
            raise self.fail(key, "must be a list")
        return value

    def names(self, key: str, default: Any = _REQUIRED) -> tuple[str, ...] | None:
        value = self._get(key, default)
        if value is default or value is None:
            return value
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, "must be a list of non-empty strings")
        return tuple(value)

    def one_of(self, key: str, choices: tuple[str, ...], default: Any = _REQUIRED) -> Any:
        value = self._get(key, default)
        if value is not default and value not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}")
        return value


def _requires(field: _Field) -> dict | None:
    raw = field.data.get("requires")
    if raw is None:
        return None
    inner = _Field(raw, f"{field.path}.requires")
    return {"all": list(inner.names("all", ())), "any": list(inner.names("any", ()))}


def _placement(field: _Field) -> dict | None:
    raw = field.data.get("placement")
    if raw is None:
        return None
    inner = _Field(raw, f"{field.path}.placement")
    return {
        "isolation": inner.one_of("isolation", ISOLATIONS, None),
        "models": list(inner.names("models", ())),
        "tools": list(inner.names("tools", ())),
        "credentials": list(inner.names("credentials", ())),
    }


def _stage(raw: Any, path: str, order: int) -> StageSpec:
    field = _Field(raw, path)
    key = field.text("key")
    owner_kind = field.one_of("ownerKind", OWNER_KINDS, "capability")
    requires = _requires(field)
    owner = field.text("owner", key if owner_kind == "capability" else _REQUIRED)
    return StageSpec(
        key=key,
        name=field.text("name", key.title()),
        order=field.integer("order", 0, 1000, order),
        owner_kind=owner_kind,
        owner=owner,
        requires=requires,
        placement=_placement(field),
    )


def _board(raw: Any, path: str) -> BoardSpec:
    field = _Field(raw, path)
    stages = tuple(_stage(s, f"{path}.stages[{i}]", i + 1) for i, s in enumerate(field.items("stages")))
    if not stages:
        raise field.fail("stages", "must name at least one stage")
    _unique([s.key for s in stages], f"{path}.stages", "key")
    weights_raw = field._get("priorityWeights", {"0": 1.0})
    if not isinstance(weights_raw, dict) or not weights_raw:
        raise field.fail("priorityWeights", "must map priorities to weights")
    try:
        weights = tuple(sorted((int(p), float(w)) for p, w in weights_raw.items()))
    except (TypeError, ValueError):
        raise field.fail("priorityWeights", "must map whole-number priorities to numeric weights")
    if any(w < 0 for _, w in weights) or sum(w for _, w in weights) <= 0:
        raise field.fail("priorityWeights", "weights must be non-negative with a positive sum")
    return BoardSpec(
        id=field.text("id"),
        name=field.text("name", field.data.get("id", "")),
        stages=tuple(sorted(stages, key=lambda s: s.order)),
        arrival_per_minute=field.number("arrivalPerMinute", 0, 600, 0.0),
        placement_window_seconds=field.integer("placementWindowSeconds", 0, 30, 0),
        priority_weights=weights,
        initial_cards=field.integer("initialCards", 0, 100000, 0),
        burst_every_minutes=field.number("burstEveryMinutes", 0, 10080, 0.0),
        burst_cards=field.integer("burstCards", 0, 10000, 0),
    )


def _membership(raw: Any, path: str, agent_id: str) -> Membership:
    if isinstance(raw, str):
        raw = {"board": raw}
    field = _Field(raw, path)
    return Membership(
        board_id=field.text("board"),
        bridge=field.flag("bridge", True),
        enabled=field.flag("enabled", True),
        key=field.text("key", agent_id.removeprefix("agt_") + "-bridge"),
    )


def _agent(raw: Any, path: str) -> AgentSpec:
    field = _Field(raw, path)
    agent_id = field.text("id")
    principal = field.data.get("principal", "prn_" + agent_id.removeprefix("agt_"))
    if principal is not None and (not isinstance(principal, str) or not principal):
        raise field.fail("principal", "must be a non-empty string or null")
    memberships = tuple(
        _membership(m, f"{path}.boards[{i}]", agent_id) for i, m in enumerate(field.items("boards", []))
    )
    _unique([m.board_id for m in memberships], f"{path}.boards", "board")
    return AgentSpec(
        id=agent_id,
        principal_id=principal,
        capabilities=field.names("capabilities", ()),
        station_id=field.text("station", None),
        memberships=memberships,
        speed_seconds=field.number("speedSeconds", 1, 86400, 60.0),
        success_rate=field.number("successRate", 0, 1, 0.9),
        stage_success=_stage_rates(field, "successByStage"),
        verdict_quality=field.number("verdictQuality", 0, 1, 0.8),
        no_show=field.number("noShow", 0, 1, 0.0),
        poll_seconds=field.number("pollSeconds", 0.5, 3600, 5.0),
        concurrency=field.integer("concurrency", 1, 100, 1),
        capacity=field.integer("capacity", 1, 100, None),
        grants=field.names("grants", None),
        ready=field.flag("ready", True),
    )


def _stage_rates(field: _Field, key: str) -> tuple[tuple[str, float], ...]:
    raw = field._get(key, {})
    if not isinstance(raw, dict):
        raise field.fail(key, "must map stage keys to rates")
    for stage_key, rate in raw.items():
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise field.fail(f"{key}.{stage_key}", "must be a number from 0 to 1")
    return tuple(sorted((stage_key, float(rate)) for stage_key, rate in raw.items()))


def _facts(field: _Field, key: str, id_key: str) -> tuple[dict, ...]:
    facts = []
    for i, raw in enumerate(field.items(key, [])):
        fact = _Field(raw if not isinstance(raw, str) else {id_key: raw}, f"{field.path}.{key}[{i}]")
        facts.append({id_key: fact.text(id_key), "proof": fact.one_of("proof", PROOFS, "declared")})
    return tuple(facts)


def _station(raw: Any, path: str) -> StationSpec:
    field = _Field(raw, path)
    isolation = None
    if field.data.get("isolation") is not None:
        iso_raw = field.data["isolation"]
        iso = _Field(iso_raw if not isinstance(iso_raw, str) else {"value": iso_raw}, f"{path}.isolation")
        isolation = {
            "value": iso.one_of("value", ISOLATIONS),
            "proof": iso.one_of("proof", PROOFS, "declared"),
        }
    return StationSpec(
        station_id=field.text("stationId"),
        runtime=field.text("runtime", None),
        harness=field.text("harness", None),
        isolation=isolation,
        models=_facts(field, "models", "id"),
        tools=_facts(field, "tools", "id"),
        credentials=_facts(field, "credentials", "name"),
    )


def _policy(raw: Any, path: str) -> PolicySpec:
    field = _Field(raw, path)
    rules = []
    for i, rule_raw in enumerate(field.items("rules", [])):
        rule = _Field(rule_raw, f"{path}.rules[{i}]")
        rules.append(
            PolicyRule(
                agent_id=rule.text("agentId"),
                allow=rule.one_of("effect", ("allow", "deny")) == "allow",
                board_id=rule.text("boardId", None),
                stage_key=rule.text("stageKey", None),
                reason=rule.text("reason", ""),
            )
        )
    limits = []
    for i, limit_raw in enumerate(field.items("limits", [])):
        limit = _Field(limit_raw, f"{path}.limits[{i}]")
        limits.append(
            (
                limit.text("agentId"),
                limit.integer("maxRuns", 0, 100000),
                limit.number("windowHours", 0.01, 8760),
            )
        )
    return PolicySpec(
        version=field.text("version"),
        rules=tuple(rules),
        limits=tuple(limits),
        default_allow=field.one_of("default", ("allow", "deny"), "allow") == "allow",
    )


def _unique(values: list[str], path: str, what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ScenarioError(f"{path}: {what} {value!r} appears twice")
        seen.add(value)


def _check_references(scenario: Scenario) -> None:
    boards = {b.id for b in scenario.boards}
    agents = {a.id for a in scenario.agents}
    for i, agent in enumerate(scenario.agents):
        for j, membership in enumerate(agent.memberships):
            if membership.board_id not in boards:
                raise ScenarioError(f"agents[{i}].boards[{j}]: unknown board {membership.board_id!r}")
        for board in agent.grants or ():
            if board not in boards:
                raise ScenarioError(f"agents[{i}].grants: unknown board {board!r}")
    if scenario.policy:
        for i, rule in enumerate(scenario.policy.rules):
            if rule.agent_id not in agents:
                raise ScenarioError(f"policy.rules[{i}].agentId: unknown agent {rule.agent_id!r}")
        for i, (agent_id, _, _) in enumerate(scenario.policy.limits):
            if agent_id not in agents:
                raise ScenarioError(f"policy.limits[{i}].agentId: unknown agent {agent_id!r}")


def parse_scenario(data: Any, name: str = "scenario") -> Scenario:
    """A validated Scenario from decoded JSON; ScenarioError names the first bad field."""
    field = _Field(data, name)
    start_text = field.text("start", None)
    try:
        start = parse_rfc3339(start_text) if start_text else DEFAULT_START
    except ValueError:
        raise field.fail("start", "must be an RFC 3339 time")
    scopes = field.names("credentialScopes", SCOPES)
    for scope in scopes:
        if scope not in SCOPES:
            raise field.fail("credentialScopes", f"unknown scope {scope!r}")
    scenario = Scenario(
        name=field.text("name", name),
        seed=field.integer("seed", 0, 2**63, 0),
        tenant_id=field.text("tenantId", "tnt_sandbox"),
        start=start,
        boards=tuple(_board(b, f"boards[{i}]") for i, b in enumerate(field.items("boards"))),
        agents=tuple(_agent(a, f"agents[{i}]") for i, a in enumerate(field.items("agents", []))),
        stations=tuple(_station(s, f"stations[{i}]") for i, s in enumerate(field.items("stations", []))),
        policy=_policy(data["policy"], "policy") if data.get("policy") is not None else None,
        credential_scopes=scopes,
    )
    _unique([b.id for b in scenario.boards], "boards", "id")
    _unique([a.id for a in scenario.agents], "agents", "id")
    _unique([s.station_id for s in scenario.stations], "stations", "stationId")
    _check_references(scenario)
    return scenario


def load_scenario(name_or_path: str | Path) -> Scenario:
    """A shipped scenario by name (`demo`), or any scenario file by path."""
    path = Path(name_or_path)
    if path.suffix != ".json":
        path = SCENARIO_DIR / f"{name_or_path}.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file")
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})")
    try:
        return parse_scenario(data, path.stem)
    except ScenarioError as exc:
        raise ScenarioError(f"{path.name}: {exc}") from None


def shipped_scenarios() -> list[str]:
    """The names of the scenarios in `sandbox/scenarios/`."""
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.json"))
