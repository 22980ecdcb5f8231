"""A flat registry of declarations, written once for the filters and the formulas.

As kube-scheduler keeps its plugins in one map, a kind of declaration (a `Filter`, a `Formula`)
is kept here by its name, in the order declared. The kind says what makes a declaration sound
and what to forget when the registry changes; adding, withdrawing and declaring for a test's
length are the same for every kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


def _nothing(*_: object) -> None:
    return None


class Registry(Generic[T]):
    """Declarations of one kind, by name, in the order declared."""

    def __init__(
        self,
        kind: str,
        name: Callable[[T], str],
        *,
        check: Callable[[T], None] = _nothing,
        check_withdraw: Callable[[T], None] = _nothing,
        changed: Callable[[], None] = _nothing,
    ) -> None:
        self.kind = kind  # as an error names it: "filter", "formula"
        self.name = name
        self.check = check  # raises ValueError naming what is wrong with a new declaration
        self.check_withdraw = check_withdraw  # raises ValueError for one that must stay
        self.changed = changed  # what the kind derives from its declarations, forgotten
        self.items: dict[str, T] = {}

    def declare(self, item: T) -> T:
        """Add a declaration, once it is one every reader can use."""
        name = self.name(item)
        if name in self.items:
            raise ValueError(f"{self.kind} {name} is already declared")
        self.check(item)
        self.items[name] = item
        self.changed()
        return item

    def withdraw(self, item: T) -> None:
        """Remove a declaration (a test's own, when the test is done)."""
        self.check_withdraw(item)
        name = self.name(item)
        if self.items.get(name) is not item:
            raise ValueError(f"{self.kind} {name} is not declared")
        del self.items[name]
        self.changed()

    @contextmanager
    def declared(self, *items: T) -> Iterator[tuple[T, ...]]:
        """These declared for the length of the block, as if they were declared beside the rest."""
        added: list[T] = []
        try:
            for each in items:
                added.append(self.declare(each))
            yield items
        finally:
            for each in reversed(added):
                self.withdraw(each)
