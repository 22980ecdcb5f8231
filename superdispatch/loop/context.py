"""What one run of the loop works with: the clients, the settings, the rules and a clock."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from common.config import Config
from placement import Rules
from superdispatch.clients import Clients, build_clients


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def rules_from(cfg: Config) -> Rules:
    return Rules(
        top_k=cfg.top_k,
        reservation_seconds=cfg.reservation_seconds,
        runner_up_seconds=cfg.runner_up_seconds,
        candidates=cfg.candidates,
        station_filters=cfg.station_filters == "on",
        min_proof=cfg.min_proof,
        history_min_sample=cfg.history_min_sample,
        history_half_life_days=float(cfg.history_half_life_days),
        formula=cfg.formula,
        placement_window_s=cfg.placement_window_seconds,
        hold_min_s=cfg.hold_min_seconds,
        window_min_s=cfg.placement_window_min_seconds,
    )


@dataclass
class Loop:
    """The loop's dependencies. Production builds it from settings; tests hand it a sandbox."""

    clients: Clients
    cfg: Config
    clock: Callable[[], datetime] = utc_now
    rules: Rules = field(init=False)

    def __post_init__(self) -> None:
        self.rules = rules_from(self.cfg)

    @classmethod
    def from_settings(cls) -> "Loop":
        from django.conf import settings

        cfg = settings.SUPERDISPATCH
        return cls(build_clients(cfg), cfg)
