"""A small registry that keeps each mistake (or accepted alternative) next to its hint.

An exercise file writes every wrong and every right-but-different answer as an ordinary function or
class, decorated with what the check should say about it::

    bank = Bank()

    @bank.mistake("no scaling", "divide the dot products by the square root of d_head")
    def scores_unscaled(q, k):
        return q @ k.transpose(-2, -1)

    @bank.alternative("einsum")
    def scores_einsum(q, k):
        return torch.einsum("...qd,...kd->...qk", q, k) / q.shape[-1] ** 0.5

and passes ``bank.mistakes`` and ``bank.alternatives`` to its ``Exercise``. The order of the list is
the order of the file, which is the order the check tries them (the first mistake that matches a
student's answer gives the hint).
"""

from __future__ import annotations

from typing import Callable, TypeVar

from course_utils.checks.core import Alternative, Mistake

Impl = TypeVar("Impl", bound=Callable)


class Bank:
    """The mistakes and accepted alternatives of one exercise, in the order they are declared."""

    def __init__(self) -> None:
        self.mistakes: list[Mistake] = []
        self.alternatives: list[Alternative] = []

    def mistake(self, name: str, hint: str) -> Callable[[Impl], Impl]:
        """Register the decorated function or class as a typical mistake; ``hint`` is what the check says."""
        if not (isinstance(name, str) and name and isinstance(hint, str) and hint):
            raise ValueError(f"a mistake needs a non-empty name and hint, got name={name!r}, hint={hint!r}")

        def register(impl: Impl) -> Impl:
            self.mistakes.append(Mistake(name, impl, hint))
            return impl

        return register

    def alternative(self, name: str) -> Callable[[Impl], Impl]:
        """Register the decorated function or class as a correct answer the check must accept."""
        if not (isinstance(name, str) and name):
            raise ValueError(f"an alternative needs a non-empty name, got {name!r}")

        def register(impl: Impl) -> Impl:
            self.alternatives.append(Alternative(name, impl))
            return impl

        return register
