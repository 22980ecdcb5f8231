"""Answers remembered by the identity of an immutable read that one pass hands every card alike."""

from __future__ import annotations

from typing import Any, Callable, Generic, Hashable, Iterable, TypeVar

T = TypeVar("T")


class IdentityMemo(Generic[T]):
    """The last few answers, keyed by the identity of the tuple they were worked out from.

    The loop hands every card of a pass the very same registry and runs tuples, so their
    answers need working out once a pass, not once a card. The tuple is kept beside its
    answer, so its id cannot be reused while remembered; a full memo starts afresh. Results
    are the same with or without it: it only saves the work. Anything but a tuple is worked
    out every time.
    """

    def __init__(self, size: int):
        self.size = size
        self._answers: dict[tuple[Hashable, ...], dict[int, tuple[tuple[Any, ...], T]]] = {}
        self._count = 0

    def get(self, shared: tuple[Any, ...], key: tuple[Hashable, ...], work: Callable[[], T]) -> T:
        """The answer for one tuple, worked out only if it is not remembered."""
        remembered = self._answers_for(key).get(id(shared))
        if remembered is not None and remembered[0] is shared:
            return remembered[1]
        return self._remember(shared, key, work())

    def get_each(
        self,
        shared: Iterable[tuple[Any, ...]],
        key: tuple[Hashable, ...],
        work: Callable[[tuple[Any, ...]], T],
    ) -> list[T]:
        """The answer for each tuple, in order, worked out only for those not remembered."""
        answers = self._answers_for(key)
        found = []
        for read in shared:
            remembered = answers.get(id(read))
            if remembered is not None and remembered[0] is read:
                found.append(remembered[1])
                continue
            answer = work(read)
            if type(read) is tuple:
                answers[id(read)] = (read, answer)
                self._count += 1
            found.append(answer)
        return found

    def _answers_for(self, key: tuple[Hashable, ...]) -> dict[int, tuple[tuple[Any, ...], T]]:
        if self._count >= self.size:
            self._answers.clear()
            self._count = 0
        answers = self._answers.get(key)
        if answers is None:
            answers = self._answers[key] = {}
        return answers

    def _remember(self, shared: tuple[Any, ...], key: tuple[Hashable, ...], answer: T) -> T:
        if type(shared) is tuple:
            self._answers_for(key)[id(shared)] = (shared, answer)
            self._count += 1
        return answer
