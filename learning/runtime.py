"""What the loop hands placement: the latest model, the mode, and whether the gate passes now.

Read at most once a minute per process (and again at once when the settings change), so a
sweep over many cards costs no more than one read of the store.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from common.config import Config
from learning import store
from placement import learned

log = logging.getLogger("superdispatch.learning")

REREAD = timedelta(minutes=1)


@dataclass(frozen=True)
class PlacementModel:
    """The model the loop applies, in `shadow` or `on` mode, and how the gate read."""

    model: learned.LearnedModel
    mode: str  # "shadow" or "on"
    gate_passed: bool  # only read in "on"; False in shadow, where the model never places
    gate_reason: str | None  # the failing test, for the log: "min-shadow: 12 settled ..."

    @property
    def places(self) -> bool:
        """Whether the model's choice is held rather than the formula's."""
        return self.mode == "on" and self.gate_passed


def read(config: Config) -> PlacementModel | None:
    """Read the store now: None when learned routing is off or no model has been trained."""
    if config.learned == "off":
        return None
    stored = store.latest()
    if stored is None:
        log.info("learned routing %s: no model trained yet; the formula places", config.learned)
        return None
    if tuple(stored.features) != learned.FEATURES:
        log.warning(
            "learned routing %s: model %s v%d was trained on other features than placement "
            "computes; train a new one; the formula places",
            config.learned,
            stored.id,
            stored.version,
        )
        return None
    passed, reason = False, None
    if config.learned == "on":
        reading = store.gate_reading(stored, store.shadow_counts(stored, config), config)
        passed, reason = reading.passed, store.gate_reason(reading)
        if passed:
            log.info("learned routing on: model %s v%d passes the gate and places", stored.id, stored.version)
        else:
            log.info(
                "learned routing on: model %s v%d is short of the gate, the formula places: %s",
                stored.id,
                stored.version,
                reason,
            )
    return PlacementModel(stored.placement_model(), config.learned, passed, reason)


class ModelCache:
    """One process's last reading, and when and under which settings it was taken."""

    def __init__(self, every: timedelta = REREAD) -> None:
        self.every = every
        self.reset()

    def reset(self) -> None:
        self._read_at: datetime | None = None
        self._key: tuple | None = None
        self._value: PlacementModel | None = None

    def get(self, now: datetime, config: Config) -> PlacementModel | None:
        """The cached reading while it is younger than `every`, else a fresh one."""
        key = (
            config.learned,
            config.learned_min_rows,
            config.learned_min_shadow,
            config.learned_margin_pct,
            config.learned_credit,
        )
        fresh = (
            self._read_at is not None
            and key == self._key
            and self._read_at <= now < self._read_at + self.every
        )
        if not fresh:
            self._value = read(config)
            self._read_at, self._key = now, key
        return self._value


_cache = ModelCache()


def placement_model(now: datetime, config: Config | None = None) -> PlacementModel | None:
    """The model for this decision under `SUPERDISPATCH_LEARNED`; None when off or untrained."""
    return _cache.get(now, config or settings.SUPERDISPATCH)


def reset_cache() -> None:
    """Forget the last reading, so the next call reads the store (for tests and after training)."""
    _cache.reset()
    store.shadow_kept.forget()
