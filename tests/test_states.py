"""The state machines, table-driven: every transition each table allows or refuses."""

from __future__ import annotations

import itertools

import pytest
from fgcpay.domain import checkout
from fgcpay.domain.states import StateMachine, Transition, TransitionRefused, final_statuses

# The checkout sessions' rules, written out once more by hand: the table must say this.
CHECKOUT_ALLOWED = {("created", "paid"), ("created", "expired")}
CHECKOUT_PAIRS = list(itertools.product(checkout.STATUSES, repeat=2))


@pytest.mark.parametrize(("from_status", "to_status"), CHECKOUT_PAIRS)
def test_checkout_session_transitions(from_status: str, to_status: str) -> None:
    allowed = (from_status, to_status) in CHECKOUT_ALLOWED
    assert checkout.STATES.allows(from_status, to_status) is allowed


@pytest.mark.parametrize(
    ("name", "from_status"), list(itertools.product(["pay", "expire"], checkout.STATUSES))
)
def test_a_named_checkout_transition_leaves_only_from_its_sources(
    name: str, from_status: str
) -> None:
    transition = checkout.STATES.transition(name)
    if (from_status, transition.target) in CHECKOUT_ALLOWED:
        assert checkout.STATES.check(name, from_status) == transition
    else:
        with pytest.raises(TransitionRefused):
            checkout.STATES.check(name, from_status)


def test_checkout_session_table() -> None:
    assert checkout.STATES.transition("pay") == Transition("pay", {"created"}, "paid")
    assert checkout.STATES.transition("expire") == Transition("expire", {"created"}, "expired")
    assert checkout.STATES.final == {"paid", "expired"}
    assert checkout.STATES.sources("paid") == {"created"}
    assert checkout.STATES.sources("created") == frozenset()
    with pytest.raises(LookupError):
        checkout.STATES.transition("refund")


# The shape the next tables need: several sources, and a status reached more than one way.
SUBSCRIPTIONS = StateMachine(
    "subscription",
    statuses=("paused", "active", "past_due", "cancelled", "ended"),
    transitions=(
        Transition("activate", {"paused"}, "active"),
        Transition("miss_payment", {"active"}, "past_due"),
        Transition("recover", {"past_due"}, "active"),
        Transition("cancel", {"paused", "active", "past_due"}, "cancelled"),
        Transition("end", {"active", "past_due"}, "ended"),
    ),
)
SUBSCRIPTIONS_ALLOWED = {
    ("paused", "active"),
    ("active", "past_due"),
    ("past_due", "active"),
    ("paused", "cancelled"),
    ("active", "cancelled"),
    ("past_due", "cancelled"),
    ("active", "ended"),
    ("past_due", "ended"),
}


@pytest.mark.parametrize(
    ("from_status", "to_status"), list(itertools.product(SUBSCRIPTIONS.statuses, repeat=2))
)
def test_a_table_with_several_sources(from_status: str, to_status: str) -> None:
    allowed = (from_status, to_status) in SUBSCRIPTIONS_ALLOWED
    assert SUBSCRIPTIONS.allows(from_status, to_status) is allowed


def test_final_statuses_are_those_no_transition_leaves() -> None:
    assert SUBSCRIPTIONS.final == {"cancelled", "ended"}
    assert SUBSCRIPTIONS.sources("active") == {"paused", "past_due"}
    assert final_statuses([checkout.STATES, SUBSCRIPTIONS]) == {
        "paid",
        "expired",
        "cancelled",
        "ended",
    }


@pytest.mark.parametrize(
    ("statuses", "transitions"),
    [
        (("a", "b"), (Transition("go", {"a"}, "c"),)),  # an undeclared target
        (("a", "b"), (Transition("go", {"z"}, "b"),)),  # an undeclared source
        (("a", "b"), (Transition("go", set(), "b"),)),  # no source at all
        (("a", "b"), (Transition("go", {"a"}, "b"), Transition("go", {"b"}, "a"))),  # twice
        (("a", "B'; --"), ()),  # a status name that is not a lower-case word
    ],
)
def test_a_malformed_table_is_refused_when_declared(
    statuses: tuple[str, ...], transitions: tuple[Transition, ...]
) -> None:
    with pytest.raises(ValueError):
        StateMachine("broken", statuses, transitions)
