"""What one run of the loop works with: the clients, the settings, the rules and a clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from common.config import Config, rules_from
from placement import Rules
from superdispatch.clients import Clients, build_clients


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class Loop:
    """The loop's dependencies. Production builds it from settings; tests hand it a sandbox."""

    clients: Clients
    cfg: Config
    clock: Callable[[], datetime] = utc_now
    rules: Rules = field(init=False)
    # The deployment's rules with a board's own formula or an experiment's arm (`loop/arms.py`).
    rules_by: dict = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.rules = rules_from(self.cfg)

    @classmethod
    def from_settings(cls) -> "Loop":
        from django.conf import settings

        cfg = settings.SUPERDISPATCH
        return cls(build_clients(cfg), cfg)
