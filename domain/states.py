"""State machines: a resource's statuses and its named transitions, declared once as a
table. The actors decide with it and storage's conditional writes guard with it, so a
status rule lives in one place."""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

# Status names reach SQL as literals (so a partial index on a status still serves the
# query): only lower-case words, never anything a caller typed.
_STATUS_NAME = re.compile(r"[a-z][a-z_]*")


class TransitionRefused(Exception):
    """A transition was asked of a status it does not leave from (a bug in the caller:
    the actors ask `allows` first and answer in the customer's or merchant's terms)."""


def _frozen(statuses: Iterable[str]) -> frozenset[str]:
    return frozenset(statuses)


@attrs.frozen
class Transition:
    """`name` moves a resource from any of `sources` to `target`."""

    name: str
    sources: frozenset[str] = attrs.field(converter=_frozen)
    target: str


@attrs.frozen
class StateMachine:
    """One resource's statuses and the transitions allowed between them."""

    resource: str
    statuses: tuple[str, ...]
    transitions: tuple[Transition, ...]

    def __attrs_post_init__(self) -> None:
        for status in self.statuses:
            if not _STATUS_NAME.fullmatch(status):
                raise ValueError(f"{self.resource}: status {status!r} is not a lower-case word")
        names = [transition.name for transition in self.transitions]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.resource}: a transition name is declared twice")
        for transition in self.transitions:
            unknown = (transition.sources | {transition.target}) - set(self.statuses)
            if unknown or not transition.sources:
                raise ValueError(f"{self.resource}.{transition.name}: bad statuses {unknown}")

    @property
    def final(self) -> frozenset[str]:
        """The statuses no transition leaves."""
        left = {source for transition in self.transitions for source in transition.sources}
        return frozenset(self.statuses) - left

    def transition(self, name: str) -> Transition:
        for transition in self.transitions:
            if transition.name == name:
                return transition
        raise LookupError(f"{self.resource} has no transition {name!r}")

    def allows(self, from_status: str, to_status: str) -> bool:
        """Whether some transition moves `from_status` to `to_status`."""
        return from_status in self.sources(to_status)

    def sources(self, to_status: str) -> frozenset[str]:
        """Every status a transition to `to_status` leaves from."""
        return frozenset(
            source
            for transition in self.transitions
            if transition.target == to_status
            for source in transition.sources
        )

    def check(self, name: str, from_status: str) -> Transition:
        """The transition `name` from `from_status`; `TransitionRefused` if it does not
        leave from there."""
        transition = self.transition(name)
        if from_status not in transition.sources:
            raise TransitionRefused(
                f"{self.resource}: {name} does not leave {from_status!r}"
                f" (only {', '.join(sorted(transition.sources))})"
            )
        return transition


def final_statuses(machines: Iterable[StateMachine]) -> frozenset[str]:
    """The statuses that are final in each of `machines` (a page showing several kinds of
    resource treats these as settled)."""
    return frozenset(status for machine in machines for status in machine.final)
