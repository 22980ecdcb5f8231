"""Answers remembered by the identity of an immutable read that one pass hands every card alike."""
from __future__ import annotations

from typing import Callable, Generic, Hashable, TypeVar

T = TypeVar("T")


class IdentityMemo(Generic[T]):
    """The last few answers, keyed by the identity of the tuple they were worked out from.

    The loop hands every card of a pass the very same registry and runs tuples, so their
    answers need working out once a pass, not once a card. The tuple is kept beside its
    answer, so its id cannot be reused while remembered; a full memo starts afresh. Results
    are the same with or without it: it only saves the work.
    """

    def __init__(self, size: int):
        self.size = size
        self._answers: dict[tuple, tuple[tuple, T]] = {}

    def get(self, shared: tuple, key: tuple[Hashable, ...], work: Callable[[], T]) -> T:
        k = (id(shared), *key)
        remembered = self._answers.get(k)
        if remembered is not None and remembered[0] is shared:
            return remembered[1]
        answer = work()
        if len(self._answers) >= self.size:
            self._answers.clear()
        self._answers[k] = (shared, answer)
        return answer
